"""How one replica's output is read: the tool-call and reasoning formats of its model
(configured, or recognised from its chat template), and the decoder each request gets."""

from __future__ import annotations

import functools
from collections.abc import Callable

from backends.base import GenerationRequest
from backends.reasoning.choice import NO_REASONING, detect_format, reasoning_parser
from backends.reasoning.choice import SPECIAL_MARKERS as REASONING_SPECIAL_MARKERS
from backends.reasoning.parsed import ReasoningParser
from backends.tool_calls.choice import SPECIAL_MARKERS, tool_format, tool_parser
from backends.tool_calls.parsed import ToolCallParser
from backends.vllm_grpc.decoding import DecodeOptions
from backends.vllm_grpc.logprobs import TokenTexts
from backends.vllm_grpc.request_builder import PreparedPrompt
from backends.vllm_grpc.response_decoder import ResponseDecoder
from backends.vllm_grpc.tokenizer_store import TokenizerBundle
from core.protocol import ChatCompletionRequest, CompletionRequest

Body = ChatCompletionRequest | CompletionRequest


class OutputFormats:
    """`tool_format` and `reasoning_format` as configured (GATEWAY_TOOL_PARSERS,
    GATEWAY_REASONING_PARSERS); None reads the chat template."""

    def __init__(self, tool_format: str | None, reasoning_format: str | None) -> None:
        self._tool_format = tool_format
        self._reasoning_format = reasoning_format
        # The format the chat template showed, and the tokenizer it was read from.
        self._detected: tuple[TokenizerBundle, str | None] | None = None

    def decoder(
        self,
        request: GenerationRequest,
        prepared: PreparedPrompt,
        bundle: TokenizerBundle,
        token_texts: TokenTexts,
    ) -> ResponseDecoder:
        """The decoder of one request's answer; a 400 here, before any RPC, when its tools
        cannot be parsed."""
        body = request.body
        skip_special_tokens = body.skip_special_tokens
        tools: Callable[[], ToolCallParser | None] = _none
        reasoning: Callable[[], ReasoningParser | None] = _none
        if isinstance(body, ChatCompletionRequest):
            thinks = self.reasoning_format(bundle)
            if thinks is not None:
                reasoning = functools.partial(reasoning_parser, thinks, prepared.prompt_tail)
                if thinks in REASONING_SPECIAL_MARKERS:
                    skip_special_tokens = False  # Harmony's channels are special tokens
            if body.tools:
                source = bundle.chat_template(tools=True).source
                tool_parser(body, self._tool_format, source)  # the 400, if there is one
                tools = functools.partial(tool_parser, body, self._tool_format, source)
                if tool_format(body, self._tool_format, source) in SPECIAL_MARKERS:
                    skip_special_tokens = False
        options = DecodeOptions(
            skip_special_tokens=skip_special_tokens,
            spaces_between_special_tokens=body.spaces_between_special_tokens,
            prompt_ids=prepared.prompt_ids,
            hidden_ids=_hidden_stop_ids(body, bundle),
            min_tokens=body.min_tokens or 0,
            echo_only=isinstance(body, CompletionRequest) and body.echo_only,
        )
        return ResponseDecoder(
            bundle,
            request.endpoint,
            n=body.n,
            stops=body.stop_list,
            include_stop_str=body.include_stop_str_in_output,
            options=options,
            echo=prepared.echo_text,
            token_text=token_texts,
            tools=tools,
            reasoning=reasoning,
        )

    def reasoning_format(self, bundle: TokenizerBundle) -> str | None:
        """The configured reasoning format, else the one the chat template shows (read once
        per tokenizer: a replica restarted with another model brings another template)."""
        if self._reasoning_format is not None:
            return None if self._reasoning_format == NO_REASONING else self._reasoning_format
        detected = self._detected
        if detected is None or detected[0] is not bundle:
            template = bundle.chat_templates.get("default")
            found = detect_format(template.source) if template is not None else None
            detected = self._detected = (bundle, found)
        return detected[1]


def _none() -> None:
    return None


def _hidden_stop_ids(body: Body, bundle: TokenizerBundle) -> frozenset[int]:
    """The tokens the engine stops on (`stop_token_ids`, and the model's EOS ids unless
    `ignore_eos`) whose text vLLM leaves out: all of them, unless
    `include_stop_str_in_output` asks for the stop in the text."""
    if body.include_stop_str_in_output:
        return frozenset()
    eos = () if body.ignore_eos else bundle.eos_token_ids
    return frozenset((*eos, *(body.stop_token_ids or ())))
