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


def test_tools_and_calls_count_as_the_template_renders_them() -> None:
    """Tool definitions and an assistant's calls are prompt too: their JSON, estimated like
    text (a request with tool schemas was estimated at a tenth of its tokens)."""
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
    calls = [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]
    plain = [{"role": "user", "content": "hi"}]
    base = prompt_tokens(_parse(ChatCompletionRequest, messages=plain))
    with_tools = prompt_tokens(_parse(ChatCompletionRequest, messages=plain, tools=tools))
    assert with_tools - base == -(-len(orjson.dumps(tools)) // 4)
    history = [*plain, {"role": "assistant", "content": None, "tool_calls": calls}]
    called = prompt_tokens(_parse(ChatCompletionRequest, messages=history))
    assert called - base == 4 + -(-len(orjson.dumps(calls)) // 4)


def test_text_in_other_scripts_counts_more_tokens_a_character() -> None:
    """A CJK character takes three UTF-8 bytes: a quarter token, and one more for its two
    extra bytes (1,440 of them were estimated at 360 tokens, for 2,536)."""
    assert prompt_tokens(_parse(CompletionRequest, prompt="中" * 1440)) == 360 + 1440
    assert prompt_tokens(_parse(CompletionRequest, prompt="a" * 1440)) == 360
