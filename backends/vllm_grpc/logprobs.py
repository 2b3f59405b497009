"""Turns vLLM's token-id logprobs into the OpenAI shapes of chat and text completions."""

from __future__ import annotations

import codecs
from collections.abc import Sequence
from typing import Any

from tokenizers import Tokenizer

from backends.vllm_grpc.token_bytes import raw_bytes_reader
from core.answers import Endpoint


class TokenTexts:
    """Decoded text and raw bytes of single tokens, memoized: logprob rendering asks for the
    same ids often. A token that holds part of a character decodes to U+FFFD (as vLLM shows
    it), but its bytes are its own (`token_bytes`), so that a client joining the bytes
    of a choice's tokens gets its text back."""

    def __init__(self, tokenizer: Tokenizer) -> None:
        self._tokenizer = tokenizer
        self._texts: dict[int, str] = {}
        self._bytes: dict[int, bytes] = {}
        self._keys: dict[int, str] = {}
        self._raw = raw_bytes_reader(tokenizer)

    def __call__(self, token_id: int) -> str:
        text = self._texts.get(token_id)
        if text is None:
            text = self._tokenizer.decode([token_id], skip_special_tokens=False)
            self._texts[token_id] = text
        return text

    def raw(self, token_id: int) -> bytes:
        raw = self._bytes.get(token_id)
        if raw is None:
            raw = self._raw(token_id) or self(token_id).encode()
            self._bytes[token_id] = raw
        return raw

    def key(self, token_id: int) -> str:
        """The token as a text completion shows it: its text, or, where its bytes are not
        UTF-8 on their own, `bytes:\\xNN...` (OpenAI's spelling), so that two such tokens
        are not both U+FFFD, one key of a position's `top_logprobs` hiding the other."""
        key = self._keys.get(token_id)
        if key is None:
            raw = self.raw(token_id)
            try:
                raw.decode()
                key = self(token_id)
            except UnicodeDecodeError:
                key = "bytes:" + "".join(f"\\x{byte:02x}" for byte in raw)
            self._keys[token_id] = key
        return key


class TextOffsets:
    """Where each token starts in a choice's text, counted from the tokens' own bytes: a token
    holding the second half of "é" starts where "é" does, and the token after it one further."""

    def __init__(self, start: int) -> None:
        self._chars = start
        self._decoder: codecs.IncrementalDecoder | None = None  # made when logprobs are asked

    def advance(self, raw: bytes) -> int:
        """The offset of a token with these bytes, which then count as decoded."""
        if self._decoder is None:
            self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        offset = self._chars
        self._chars += len(self._decoder.decode(raw))
        return offset


def format_logprobs(
    endpoint: Endpoint,
    output_logprobs: Any,
    token_text: TokenTexts,
    offsets: TextOffsets,
    count: int | None = None,
) -> Any:
    """OpenAI logprobs for one delta (its first `count` positions, if given); None when the
    backend sent none."""
    ids = list(output_logprobs.token_ids)
    values = list(output_logprobs.token_logprobs)
    tops = list(output_logprobs.top_logprobs)
    if count is not None:
        del ids[count:], values[count:], tops[count:]
    if not ids:
        return None
    return format_positions(endpoint, ids, values, tops, token_text, offsets)


def format_positions(
    endpoint: Endpoint,
    ids: list[int],
    values: list[float],
    tops: list[Any],
    token_text: TokenTexts,
    offsets: TextOffsets,
) -> Any:
    """OpenAI logprobs for these positions: token ids, their logprobs and their top
    alternatives (`TopLogProbs`, fewer or None where the engine sent none)."""
    if endpoint == "chat":
        content = []
        for i, token_id in enumerate(ids):
            token = token_text(token_id)
            alternatives = []
            if i < len(tops) and tops[i] is not None:
                for alt_id, alt_value in zip(tops[i].token_ids, tops[i].values, strict=False):
                    alt = token_text(alt_id)
                    alternatives.append(
                        {"token": alt, "logprob": alt_value, "bytes": list(token_text.raw(alt_id))}
                    )
            content.append(
                {
                    "token": token,
                    "logprob": values[i],
                    "bytes": list(token_text.raw(token_id)),
                    "top_logprobs": alternatives,
                }
            )
        return {"content": content}
    top_maps: list[dict[str, float] | None] = [
        _top_map(token_id, values[i], tops[i] if i < len(tops) else None, token_text)
        for i, token_id in enumerate(ids)
    ]
    return _completion_shape(ids, values, top_maps, token_text, offsets)


def format_prompt_logprobs(input_logprobs: Any, token_text: TokenTexts) -> dict[str, Any]:
    """An echoed prompt's tokens in a completion's logprobs: the first has no logprob (nothing
    comes before it), as OpenAI and vLLM show it; offsets count from the prompt's start."""
    ids = list(input_logprobs.token_ids)
    entries = list(input_logprobs.token_logprobs)
    tops = list(input_logprobs.top_logprobs)
    values: list[float | None] = []
    top_maps: list[dict[str, float] | None] = []
    for i, token_id in enumerate(ids):
        if i < len(entries) and entries[i].HasField("value"):
            value = entries[i].value
            values.append(value)
            top_maps.append(
                _top_map(token_id, value, tops[i] if i < len(tops) else None, token_text)
            )
        else:
            values.append(None)
            top_maps.append(None)
    return _completion_shape(ids, values, top_maps, token_text, TextOffsets(0))


def _top_map(token_id: int, value: float, top: Any, token_text: TokenTexts) -> dict[str, float]:
    """A position's `top_logprobs` as vLLM and OpenAI show them: the token itself first, then
    the top alternatives (so `logprobs: 0`, which asks for none, still shows the token, and a
    sampled token outside the top k makes k+1 entries)."""
    shown = {token_text.key(token_id): value}
    if top is not None:
        for alt_id, alt_value in zip(top.token_ids, top.values, strict=False):
            shown[token_text.key(alt_id)] = alt_value
    return shown


def _completion_shape(
    ids: list[int],
    values: list[Any],
    top_maps: list[dict[str, float] | None],
    token_text: TokenTexts,
    offsets: TextOffsets,
) -> dict[str, Any]:
    """A completion's logprobs: parallel lists, offsets counted from the tokens' bytes."""
    return {
        "tokens": [token_text.key(t) for t in ids],
        "token_logprobs": values,
        "top_logprobs": top_maps,
        "text_offset": [offsets.advance(token_text.raw(t)) for t in ids],
    }


def joined_logprobs(parts: Sequence[dict[str, Any] | None]) -> dict[str, Any] | None:
    """Logprobs of consecutive pieces as one (chat's `content`, or a completion's parallel
    lists, each joined): an echoed prompt's and the output's, or a choice's deltas."""
    present = [part for part in parts if part is not None]
    if len(present) < 2:
        return present[0] if present else None
    return {key: [entry for part in present for entry in part[key]] for key in present[0]}
