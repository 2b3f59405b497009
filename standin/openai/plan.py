"""What the mock answers: a deterministic plan decided from the request before any byte is sent.

Each output word is one token. A choice's words are a window into a fixed pseudo-random word
sequence, placed by a hash of the prompt, the seed and the choice index, so equal requests
always get equal answers. `ignore_eos` (a vLLM extension) makes the answer exactly
`max_tokens` long, which benchmarks use to fix the output length.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any, Literal

import orjson

Endpoint = Literal["chat", "completion"]

_WORD_LIST = (
    "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november "
    "oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu amber azure "
    "cobalt coral crimson ivory jade lemon lilac mauve ochre olive pearl plum ruby saffron "
    "sage scarlet silver teal umber violet wheat cedar maple birch aspen willow spruce rowan "
    "hazel laurel myrtle linden poplar acacia"
)
WORDS = tuple(_WORD_LIST.split())
_MASK = (1 << 64) - 1


def _word_sequence(length: int) -> tuple[str, ...]:
    state, out = 0x2545F4914F6CDD1D, []
    for _ in range(length):
        state = (state * 6364136223846793005 + 1442695040888963407) & _MASK
        out.append(" " + WORDS[(state >> 33) % len(WORDS)])
    return tuple(out)


_SEQ_LEN = 4096
_SPACED = _word_sequence(_SEQ_LEN) * 2  # doubled, so a window of up to _SEQ_LEN never wraps


class MockRequestError(Exception):
    """A request the mock refuses, rendered as an OpenAI error body."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        param: str | None = None,
        code: str | None = None,
        type: str = "invalid_request_error",
    ) -> None:
        super().__init__(message)
        self.status = status
        self.body = error_body(message, type=type, param=param, code=code)


def error_body(message: str, *, type: str, param: str | None = None, code: str | None) -> bytes:
    return orjson.dumps({"error": {"message": message, "type": type, "param": param, "code": code}})


@dataclass(slots=True)
class Plan:
    """Everything about one answer, decided before the first byte is written."""

    endpoint: Endpoint
    model: str
    id: str
    created: int
    choices: list[list[str]]  # the text pieces (one per token) of each choice
    finish_reason: str
    prompt_tokens: int
    cached_tokens: int
    include_usage: bool
    logprobs: int | None  # None: not asked for; else the number of top logprobs
    tool: str | None  # chat only: the function the answer calls instead of writing text


def plan(
    endpoint: Endpoint, body: Any, *, output_tokens: int, seen: set[int], id: str, created: int
) -> Plan:
    """Validate a generation request just enough and decide its answer."""
    if not isinstance(body, dict):
        raise MockRequestError(400, "The request body must be a JSON object.")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise MockRequestError(400, "Missing required parameter: model.", param="model")
    n = _int_field(body, "n", 1, 1, 128)
    limit = _int_field(body, "max_completion_tokens", None, 1, 1 << 30)
    limit = _int_field(body, "max_tokens", limit, 1, 1 << 30)
    seed = _int_field(body, "seed", 0, -(1 << 63), 1 << 63)
    tool: str | None = None
    if endpoint == "chat":
        prompts = [_chat_prompt(body.get("messages"))]
        logprobs = _int_field(body, "top_logprobs", 0, 0, 20) if body.get("logprobs") else None
        tool = _forced_tool(body)
    else:
        prompts = _completion_prompts(body.get("prompt"))
        logprobs = _int_field(body, "logprobs", None, 0, 20)
    count = output_tokens if limit is None else min(output_tokens, limit)
    if body.get("ignore_eos") and limit is not None:
        count = limit
    choices: list[list[str]] = []
    prompt_tokens = cached_tokens = 0
    for prompt in prompts:  # a batch: n choices for each prompt, in order, as vLLM answers
        key = zlib.crc32(prompt.encode(), seed & 0xFFFFFFFF)
        cached = key in seen
        if not cached:
            if len(seen) > 65536:
                seen.clear()
            seen.add(key)
        tokens = len(prompt.split())
        prompt_tokens += tokens
        cached_tokens += tokens if cached else 0
        choices += [_tool_pieces(pieces(key, i, count), tool) for i in range(n)]
    stream_options = body.get("stream_options")
    return Plan(
        endpoint=endpoint,
        model=model,
        id=id,
        created=created,
        choices=choices,
        finish_reason="tool_calls" if tool else ("length" if count == limit else "stop"),
        prompt_tokens=prompt_tokens,
        cached_tokens=cached_tokens,
        include_usage=isinstance(stream_options, dict)
        and bool(stream_options.get("include_usage")),
        logprobs=logprobs,
        tool=tool,
    )


def pieces(key: int, index: int, count: int) -> list[str]:
    """`count` tokens (words, each after the first with its leading space) for choice `index`
    of the prompt whose hash is `key`: a window into a fixed pseudo-random word sequence."""
    start = (key * 0x9E3779B1 + index * 0x85EBCA77) % _SEQ_LEN
    if count <= _SEQ_LEN:
        out = list(_SPACED[start : start + count])
    else:
        out = [_SPACED[(start + i) % _SEQ_LEN] for i in range(count)]
    if out:
        out[0] = out[0][1:]
    return out


def _int_field(body: dict[str, Any], name: str, default: Any, low: int, high: int) -> Any:
    value = body.get(name)
    if value is None:
        return default
    if type(value) is not int or not low <= value <= high:
        raise MockRequestError(
            400, f"{name} must be an integer between {low} and {high}.", param=name
        )
    return value


def _chat_prompt(messages: Any) -> str:
    if not isinstance(messages, list) or not messages:
        raise MockRequestError(400, "messages must be a non-empty list.", param="messages")
    parts: list[str] = []
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts.extend(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return "\n".join(parts)


def _completion_prompts(prompt: Any) -> list[str]:
    """The prompts of a completion: one text or token list, or a batch (a list of either)."""
    if isinstance(prompt, str):
        return [prompt]
    if isinstance(prompt, list) and prompt and all(isinstance(p, int) for p in prompt):
        return [" ".join(map(str, prompt))]
    if isinstance(prompt, list) and prompt and all(isinstance(p, str | list) for p in prompt):
        return [p if isinstance(p, str) else " ".join(map(str, p)) for p in prompt]
    raise MockRequestError(400, "prompt must be a string or a non-empty list.", param="prompt")


def _forced_tool(body: dict[str, Any]) -> str | None:
    """The function to call when `tool_choice` demands a call, else None."""
    choice, tools = body.get("tool_choice"), body.get("tools")
    if isinstance(choice, dict):
        return str(choice.get("function", {}).get("name", "tool"))
    if choice == "required" and isinstance(tools, list) and tools:
        return str(tools[0].get("function", {}).get("name", "tool"))
    return None


def _tool_pieces(pieces: list[str], tool: str | None) -> list[str]:
    if tool:  # the words become the `text` argument of the call, streamed piece by piece
        pieces = ['{"text": "' + (pieces[0] if pieces else ""), *pieces[1:]]
        pieces[-1] += '"}'
    return pieces
