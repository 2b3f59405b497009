"""Turns vLLM's token-id responses into text deltas, per choice, with stop strings trimmed."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from backends.reasoning.parsed import ReasoningParser
from backends.text_origin import Piece
from backends.tool_calls.parsed import Parsed, ToolCallParser
from backends.vllm_grpc.content_origin import ContentOrigin
from backends.vllm_grpc.detokenizer import IncrementalDetokenizer
from backends.vllm_grpc.held_logprobs import HeldLogprobs
from backends.vllm_grpc.logprobs import (
    TextOffsets,
    TokenTexts,
    format_logprobs,
    format_positions,
    format_prompt_logprobs,
    joined_logprobs,
)
from backends.vllm_grpc.stop_checker import StopChecker
from backends.vllm_grpc.tokenizer_store import TokenizerBundle
from core.answers import ChoiceDelta, Endpoint

Pieces = list[Piece]  # characters of the output: see `backends.text_origin`


@dataclass(frozen=True, slots=True)
class DecodeOptions:
    """How token ids become text, as the request asked."""

    skip_special_tokens: bool
    spaces_between_special_tokens: bool
    prompt_ids: Sequence[int]
    # The tokens the engine stops on (EOS, `stop_token_ids`) whose text is not shown.
    hidden_ids: frozenset[int] = frozenset()
    min_tokens: int = 0  # no stop string or stop token ends the answer within these tokens
    echo_only: bool = False  # the echoed prompt is the answer: the engine's tokens are dropped


class ChoiceDecoder:
    """Decoding state of one choice (one `index`)."""

    __slots__ = (
        "_calls",
        "_detok",
        "_echo",
        "_echo_only",
        "_endpoint",
        "_held",
        "_hidden",
        "_loose_space",
        "_min_tokens",
        "_offsets",
        "_origin",
        "_reasoning",
        "_stop",
        "_stopped",
        "_thought",
        "_token_text",
        "_tools",
        "completion_tokens",
        "index",
        "reasoning_tokens",
    )

    def __init__(
        self,
        index: int,
        bundle: TokenizerBundle,
        endpoint: Endpoint,
        stops: list[str],
        include_stop_str: bool,
        options: DecodeOptions,
        token_text: TokenTexts,
        echo: str,
        tools: ToolCallParser | None = None,
        reasoning: ReasoningParser | None = None,
    ) -> None:
        self.index = index
        self._reasoning = reasoning  # takes the thinking out of the text, before the tools
        self._tools = tools  # turns call markup in the text into tool calls
        self._thought = reasoning is not None and reasoning.in_reasoning  # went into thinking
        self._calls = 0
        self._loose_space = ""  # whitespace-only content, held until text or a call follows
        self._endpoint = endpoint
        self._detok = IncrementalDetokenizer(
            bundle.tokenizer,
            options.skip_special_tokens,
            spaces_between_special_tokens=options.spaces_between_special_tokens,
            prompt_ids=options.prompt_ids,
            added_tokens=bundle.added_tokens,
        )
        self._hidden = options.hidden_ids
        self._min_tokens = options.min_tokens
        self._echo_only = options.echo_only
        self._stop = StopChecker(stops, include_stop_str) if stops else None
        # Logprobs wait for their text: it may yet turn out to be a stop string, thinking or
        # a call's markup (a chat choice's logprobs are those of its content's tokens).
        parsed = tools is not None or reasoning is not None
        self._held = HeldLogprobs() if stops or parsed else None
        self._origin = ContentOrigin(relayed=tools is not None and reasoning is not None)
        self._stopped = False
        self._token_text = token_text
        self._echo = echo
        self._offsets = TextOffsets(len(echo))
        self.completion_tokens = 0
        self.reasoning_tokens = 0

    def feed(
        self, token_ids: Any, output_logprobs: Any, prompt_logprobs: Any = None
    ) -> ChoiceDelta:
        """Decode new tokens into a delta (possibly with empty text); `prompt_logprobs` come
        with the first delta of a completion that echoes its prompt."""
        if self._echo_only:
            token_ids, output_logprobs = (), None
        count = len(token_ids)
        # This chunk's tokens among the first `min_tokens`: no stop string ends in their text.
        unchecked = min(count, max(0, self._min_tokens - self.completion_tokens))
        self.completion_tokens += count
        hid = (
            count > 0
            and token_ids[-1] in self._hidden
            and self.completion_tokens >= self._min_tokens
        )
        if hid:
            # The engine stopped on it (a stop token ends its output): like vLLM, its text is
            # not shown unless `include_stop_str_in_output`; nor is its logprob, so that the
            # logprobs' bytes join into the text (vLLM lists it).
            token_ids = token_ids[:-1]
        with_logprobs = output_logprobs is not None and len(output_logprobs.token_ids) > 0
        held = self._held if with_logprobs else None
        pieces = raw = None
        split = 0 < unchecked < len(token_ids)
        if len(token_ids) > 1 and (self._reasoning is not None or held is not None or split):
            # Token by token, so that each token counts as thinking or as answer, each
            # token's logprob waits for its own text, and the first `min_tokens` end no match.
            raw = [self._detok.feed([token_id]) for token_id in token_ids]
            if self._reasoning is not None:
                pieces = [self._apply_stop(piece, i >= unchecked) for i, piece in enumerate(raw)]
                text = "".join(pieces)
            else:
                text = self._apply_stop("".join(raw[:unchecked]), False)
                text += self._apply_stop("".join(raw[unchecked:]))
        else:
            text = self._detok.feed(token_ids) if token_ids else ""
            if held is not None:
                raw = [text] if token_ids else []
            text = self._apply_stop(text, unchecked == 0)
        logprobs = None
        if held is not None:
            assert raw is not None
            held.add(output_logprobs, [len(piece) for piece in raw])
        elif with_logprobs:
            shown = len(token_ids) if hid else None
            logprobs = format_logprobs(
                self._endpoint, output_logprobs, self._token_text, self._offsets, shown
            )
        if prompt_logprobs is not None and self._echo and self._endpoint == "completion":
            prompt = format_prompt_logprobs(prompt_logprobs, self._token_text)
            logprobs = joined_logprobs([prompt, logprobs])
        origin = self._origin.decoded(len(text)) if held is not None else None
        reasoning = ""
        if self._reasoning is not None:
            reasoning, text, origin = self._separate(
                self._reasoning, pieces or [text], count, origin
            )
        calls = None
        if self._tools is not None:
            text, calls, origin = self._parsed(self._tools.feed(text), origin)
            text, origin = self._beside_calls(text, calls, origin, last=False)
        if held is not None:
            assert origin is not None
            # With parsers, text held back (whitespace beside calls, a marker's start) is
            # settled only by `finish`: the stop string's tokens are decided there.
            parsed = self._tools is not None or self._reasoning is not None
            logprobs = self._show(held, origin, ended=self._stopped and not parsed)
        return ChoiceDelta(
            self.index,
            self._take_echo() + text,
            None,
            logprobs,
            calls,
            count,
            reasoning,
        )

    def _separate(
        self, parser: ReasoningParser, pieces: list[str], count: int, origin: Pieces | None
    ) -> tuple[str, str, Pieces | None]:
        """Thinking and answer of some text (and where the answer came from, when `origin`
        is followed); a piece decoded while the parser was inside the thinking before and
        after it counts as thinking (so the markers' tokens do not)."""
        thought: list[str] = []
        answer: list[str] = []
        answered: list[Piece] = []
        tokens = 1 if len(pieces) > 1 else count
        for piece in pieces:
            thinking = parser.in_reasoning
            split = parser.feed(piece)
            if parser.in_reasoning:
                self._thought = True
                if thinking:
                    self.reasoning_tokens += tokens
            thought.append(split.reasoning)
            answer.append(split.content)
            if origin is not None:
                answered.extend(split.origin)
        if origin is not None:
            origin = self._origin.answered(answered)
        return "".join(thought), "".join(answer), origin

    def finish(self, finish_reason: str) -> ChoiceDelta:
        """The last delta: whatever text was held back, and why the choice ended.

        Like vLLM, bytes of an incomplete character at the very end are dropped rather than
        shown as U+FFFD.
        """
        if self._echo_only:
            finish_reason = "length"  # `max_tokens: 0`, as OpenAI ends it
        flushed = self._detok.flush().rstrip("\ufffd")
        text = self._apply_stop(flushed)
        if self._stop is not None and not self._stopped:
            text += self._stop.finish()
        # Nothing held (no logprobs asked, or all shown): no origins to follow to the end.
        held = self._held if self._held is not None and self._held.holding else None
        origin = self._origin.decoded(len(text)) if held is not None else None
        if held is not None:
            held.flushed(len(flushed))
        reasoning = ""
        thinking = False  # the output ends inside the thinking
        if self._reasoning is not None:
            split = self._reasoning.feed(text)
            thinking = self._reasoning.in_reasoning
            last = self._reasoning.finish(cut=finish_reason == "length")
            reasoning, text = split.reasoning + last.reasoning, split.content + last.content
            if origin is not None:
                origin = self._origin.answered(split.origin + last.origin)
        calls = None
        if self._tools is not None:
            text, calls, origin = self._parsed(self._tools.feed(text), origin)
            rest, more, tail = self._parsed(
                self._tools.finish(cut=finish_reason == "length"), origin
            )
            text, calls = text + rest, (calls or []) + (more or []) or None
            if origin is not None and tail is not None:
                origin = origin + tail
            text, origin = self._beside_calls(text, calls, origin, last=True)
            if self._calls and finish_reason == "stop":
                finish_reason = self._tools.finish_reason
        logprobs = None
        if held is not None:
            assert origin is not None
            logprobs = self._show(held, origin, ended=True, thinking=thinking)
        return ChoiceDelta(
            self.index,
            self._take_echo() + text,
            finish_reason,
            logprobs,
            calls,
            0,
            reasoning,
            self._thought,
        )

    def _show(
        self, held: HeldLogprobs, origin: Pieces, *, ended: bool, thinking: bool = False
    ) -> Any:
        """The logprobs of the tokens whose text is now all shown, the output's characters
        in `origin` being shown now; once a stop string matched and `ended`, up to the token
        that completed it, as vLLM lists them (`HeldLogprobs`); `thinking`: the output
        ended inside the thinking."""
        stop = None
        if ended and self._stop is not None and self._stopped:
            stop = (self._origin.length, self._stop.trimmed)
            if stop[0] == 0 and self._thought:
                stop, thinking = None, True  # matched at the start of the thinking
        positions = held.show(origin, ended=ended, stop=stop, thinking=thinking)
        if positions is None:
            return None
        return format_positions(self._endpoint, *positions, self._token_text, self._offsets)

    def _beside_calls(
        self,
        text: str,
        calls: list[dict[str, Any]] | None,
        origin: Pieces | None,
        *,
        last: bool,
    ) -> tuple[str, Pieces | None]:
        """Content as shown once call markup is out (and where it came from, when `origin`
        is followed). Trailing whitespace is held back until more text follows, and dropped
        if a call follows it or the answer ends having made calls: the line break before or
        between calls is not content (vLLM leaves it out), whatever pieces the text arrived
        in."""
        body = text.rstrip()
        shown = self._loose_space + body if body else ""
        self._loose_space = text[len(body) :] if body else self._loose_space + text
        drop = bool(calls) or (last and self._calls > 0)
        if drop:
            self._loose_space = ""
        if last:
            shown, self._loose_space = shown + self._loose_space, ""
        if origin is not None:
            origin = self._origin.beside_calls(list(origin), len(body), drop_loose=drop, last=last)
        return shown, origin

    def _parsed(
        self, parsed: Parsed, origin: Pieces | None
    ) -> tuple[str, list[dict[str, Any]] | None, Pieces | None]:
        """Content, and the calls in OpenAI's delta shape: more arguments of the call begun
        last (its index and the text), then each call begun (index, id, type, name and its
        arguments so far); where the content came from, when `origin` is followed."""
        if origin is not None:
            origin = self._origin.parsed(parsed.origin)
        if not parsed.calls and not parsed.arguments:
            return parsed.content, None, origin
        calls: list[dict[str, Any]] = []
        if parsed.arguments:
            calls.append({"index": self._calls - 1, "function": {"arguments": parsed.arguments}})
        for call in parsed.calls:
            calls.append(
                {
                    "index": self._calls,
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                }
            )
            self._calls += 1
        return parsed.content, calls, origin

    def _apply_stop(self, text: str, check: bool = True) -> str:
        if self._stop is None:
            return text
        if self._stopped:
            return ""
        visible, matched = self._stop.feed(text, check=check)
        if matched:
            self._stopped = True
        return visible

    def _take_echo(self) -> str:
        echo, self._echo = self._echo, ""
        return echo
