"""Logprobs in OpenAI's shapes: chat bytes that join into the text, completion offsets that
point at each token's first character, even across split characters and deltas."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from tokenizers import Tokenizer

from backends.vllm_grpc.logprobs import TextOffsets, TokenTexts, format_logprobs
from standin.vllm.tokenizer_files import tokenizer_dir

TEXT = "Hi 日本 café"


def _logprobs(ids: list[int]) -> Any:
    return SimpleNamespace(token_ids=ids, token_logprobs=[-0.5] * len(ids), top_logprobs=[])


def _setup() -> tuple[TokenTexts, list[int]]:
    tokenizer = Tokenizer.from_file(str(tokenizer_dir() / "tokenizer.json"))
    return TokenTexts(tokenizer), tokenizer.encode(TEXT, add_special_tokens=False).ids


def test_chat_bytes_join_into_the_text() -> None:
    """Tokens that hold part of a character show U+FFFD, but their bytes are their own."""
    texts, ids = _setup()
    content = format_logprobs("chat", _logprobs(ids), texts, TextOffsets(0))["content"]
    assert any(entry["token"] == "\ufffd" for entry in content)
    assert bytes(b for entry in content for b in entry["bytes"]).decode() == TEXT


def test_completion_offsets_follow_the_characters_across_deltas() -> None:
    """Each offset is where the token's first character is in the text, with the tokens
    arriving one delta at a time and after an echoed prompt."""
    texts, ids = _setup()
    offsets = TextOffsets(len("Echo: "))
    starts = [
        format_logprobs("completion", _logprobs([token_id]), texts, offsets)["text_offset"][0]
        for token_id in ids
    ]
    text = "Echo: " + TEXT
    assert starts == sorted(starts) and starts[0] == len("Echo: ")
    whole = [(start, texts(t)) for start, t in zip(starts, ids, strict=True)]
    assert all(text[s : s + len(t)] == t for s, t in whole if "\ufffd" not in t)
    assert all(0 <= start < len(text) for start in starts)


def test_completion_tokens_of_part_of_a_character_are_their_bytes() -> None:
    """A text completion shows a token that is not UTF-8 on its own as `bytes:\\xNN`, as
    OpenAI does, so a position's top entries keep distinct keys and the sampled token its own
    logprob; whole-character tokens are their text."""
    texts, ids = _setup()
    partial = [t for t in ids if texts(t) == "\ufffd"]
    assert len(partial) >= 2 and len({texts.raw(t) for t in partial}) >= 2
    top = SimpleNamespace(token_ids=partial, values=[-0.1 * (i + 1) for i in range(len(partial))])
    lp = SimpleNamespace(token_ids=[partial[0]], token_logprobs=[-0.1], top_logprobs=[top])
    shown = format_logprobs("completion", lp, texts, TextOffsets(0))
    (token,) = shown["tokens"]
    assert token == "bytes:" + "".join(f"\\x{b:02x}" for b in texts.raw(partial[0]))
    (entries,) = shown["top_logprobs"]
    assert len(entries) == len(set(partial)) and entries[token] == -0.1
    whole = format_logprobs("completion", _logprobs(ids[:1]), texts, TextOffsets(0))
    assert whole["tokens"] == [texts(ids[0])]


def test_completion_top_logprobs_always_hold_the_sampled_token() -> None:
    """As vLLM answers a text completion: each position's top_logprobs is a dict with the
    sampled token first, then the top alternatives; with `logprobs: 0` (no alternatives from
    the engine) the sampled token alone, never null."""
    texts, ids = _setup()
    none = format_logprobs("completion", _logprobs(ids[:2]), texts, TextOffsets(0))
    assert none["top_logprobs"] == [{texts.key(t): -0.5} for t in ids[:2]]
    top = SimpleNamespace(token_ids=[ids[3], ids[0]], values=[-0.2, -0.9])
    lp = SimpleNamespace(token_ids=[ids[0]], token_logprobs=[-0.9], top_logprobs=[top])
    (entries,) = format_logprobs("completion", lp, texts, TextOffsets(0))["top_logprobs"]
    assert list(entries.items()) == [(texts.key(ids[0]), -0.9), (texts.key(ids[3]), -0.2)]
