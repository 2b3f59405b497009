"""The token estimate the rate limits and admission use before any tokenizer runs."""

from __future__ import annotations

from typing import Any

import orjson

from core.protocol import ChatCompletionRequest, CompletionRequest, EmbeddingRequest
from core.request_parsing import parse_request
from core.token_estimate import prompt_tokens


def _parse(kind: type[Any], **fields: Any) -> Any:
    return parse_request(orjson.dumps({"model": "m", **fields}), kind)


def test_chat_counts_text_parts_and_a_few_per_message() -> None:
    """Four characters a token, rounded up, plus four per message; image parts add nothing."""
    body = _parse(
        ChatCompletionRequest,
        messages=[
            {"role": "system", "content": "abcdefgh"},
            {"role": "user", "content": [{"type": "text", "text": "abcde"}, {"type": "image"}]},
        ],
    )
    assert prompt_tokens(body) == 2 + 2 + 4 * 2


def test_completions_and_embeddings() -> None:
    """Text is estimated, token ids are counted exactly, lists add up."""
    assert prompt_tokens(_parse(CompletionRequest, prompt="a" * 9)) == 3
    assert prompt_tokens(_parse(CompletionRequest, prompt=[5, 6, 7])) == 3
    assert prompt_tokens(_parse(EmbeddingRequest, input=["abcd", "abcdefgh"])) == 3
