"""The decoders of one request's choices, the usage they add up to, and whole answers' calls."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from backends.reasoning.parsed import ReasoningParser
from backends.tool_calls.parsed import ToolCallParser
from backends.vllm_grpc.decoding import ChoiceDecoder, DecodeOptions
from backends.vllm_grpc.logprobs import TokenTexts
from backends.vllm_grpc.tokenizer_store import TokenizerBundle
from core.answers import Endpoint, Usage


def whole_calls(deltas: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A choice's call deltas (`ChoiceDecoder`'s, in order) as whole calls, without their
    index: each call's arguments joined, as a non-streamed answer carries them."""
    calls: list[dict[str, Any]] = []
    for delta in deltas:
        function = delta["function"]
        if "id" in delta:
            calls.append(
                {**{k: v for k, v in delta.items() if k != "index"}, "function": {**function}}
            )
        else:
            calls[delta["index"]]["function"]["arguments"] += function["arguments"]
    return calls


class ResponseDecoder:
    """All choices of one request plus the usage they add up to."""

    def __init__(
        self,
        bundle: TokenizerBundle,
        endpoint: Endpoint,
        *,
        n: int,
        stops: list[str],
        include_stop_str: bool,
        options: DecodeOptions,
        echo: str,
        token_text: TokenTexts,
        tools: Callable[[], ToolCallParser | None] = lambda: None,
        reasoning: Callable[[], ReasoningParser | None] = lambda: None,
    ) -> None:
        self.choices = [
            ChoiceDecoder(
                i,
                bundle,
                endpoint,
                stops,
                include_stop_str,
                options,
                token_text,
                echo,
                tools(),
                reasoning(),
            )
            for i in range(n)
        ]
        self.usage = Usage()
        self.finished: set[int] = set()

    def note_prompt(self, prompt_tokens: int, cached_tokens: int) -> int:
        """The prompt's size as the engine reports it (on every chunk); returns how many of
        its tokens were not reported before (all of them the first time, then none)."""
        usage = self.usage
        new = prompt_tokens - usage.prompt_tokens
        usage.prompt_tokens = prompt_tokens
        usage.cached_tokens = cached_tokens
        return new

    def total_usage(self) -> Usage:
        self.usage.completion_tokens = sum(c.completion_tokens for c in self.choices)
        self.usage.reasoning_tokens = sum(c.reasoning_tokens for c in self.choices)
        return self.usage
