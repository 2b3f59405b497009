"""How the mock's answers look on the wire: OpenAI JSON bodies and SSE events."""

from __future__ import annotations

import base64
import struct
import zlib
from collections.abc import Iterator
from typing import Any

import orjson

from standin.openai.plan import MockRequestError, Plan, error_body

_MASK = (1 << 64) - 1


def completion_body(p: Plan) -> bytes:
    """The non-streaming response."""
    choices: list[dict[str, Any]] = []
    for index, pieces in enumerate(p.choices):
        logprobs = _logprobs(p, pieces, 0) if p.logprobs is not None else None
        if p.endpoint == "completion":
            choice = {"index": index, "text": "".join(pieces), "logprobs": logprobs}
        elif p.tool:
            call = _tool_call(p.tool, index, "".join(pieces))
            message = {"role": "assistant", "content": None, "tool_calls": [call]}
            choice = {"index": index, "message": message, "logprobs": logprobs}
        else:
            message = {"role": "assistant", "content": "".join(pieces)}
            choice = {"index": index, "message": message, "logprobs": logprobs}
        choice["finish_reason"] = p.finish_reason
        choices.append(choice)
    out = {**_envelope(p, chunk=False), "choices": choices, "usage": _usage(p)}
    return orjson.dumps(out)


def stream_steps(p: Plan) -> Iterator[bytes]:
    """The SSE events of a streaming response, one item per token step (all choices).

    Chat streams open each choice with a role delta, in the same step as the first token.
    """
    steps = max(len(p.choices[0]), 1)
    head = b"data: " + orjson.dumps(_envelope(p, chunk=True))[:-1] + b',"choices":['
    tail = b'],"usage":null}\n\n' if p.include_usage else b"]}\n\n"
    offsets = [0] * len(p.choices)
    for step in range(steps):
        out = []
        for index, pieces in enumerate(p.choices):
            if step == 0 and p.endpoint == "chat":
                out.append(head + orjson.dumps(_role_choice(p, index)) + tail)
            if step >= len(pieces):
                continue
            piece = pieces[step]
            lp = _logprobs(p, [piece], offsets[index]) if p.logprobs is not None else None
            offsets[index] += len(piece)
            choice = {"index": index, **_delta(p, piece), "logprobs": lp, "finish_reason": None}
            out.append(head + orjson.dumps(choice) + tail)
        if step == steps - 1:
            for index in range(len(p.choices)):
                empty: dict[str, Any] = {"delta": {}} if p.endpoint == "chat" else {"text": ""}
                done = {"index": index, **empty, "logprobs": None, "finish_reason": p.finish_reason}
                out.append(head + orjson.dumps(done) + tail)
            if p.include_usage:
                out.append(head + b'],"usage":' + orjson.dumps(_usage(p)) + b"}\n\n")
            out.append(b"data: [DONE]\n\n")
        yield b"".join(out)


def stream_error_event(message: str) -> bytes:
    """A mid-stream failure as vLLM reports it, followed by the end of the stream."""
    body = error_body(message, type="InternalServerError", code="500")
    return b"data: " + body + b"\n\ndata: [DONE]\n\n"


def embeddings_body(body: Any, dimensions: int) -> bytes:
    """One deterministic unit vector per input."""
    if not isinstance(body, dict) or not isinstance(body.get("model"), str):
        raise MockRequestError(400, "Missing required parameter: model.", param="model")
    raw = body.get("input")
    if isinstance(raw, str) or (isinstance(raw, list) and raw and isinstance(raw[0], int)):
        inputs = [raw]
    elif isinstance(raw, list) and raw:
        inputs = raw
    else:
        raise MockRequestError(400, "input must be a non-empty string or list.", param="input")
    base64_out = body.get("encoding_format") == "base64"
    size = _size(body.get("dimensions"), dimensions)
    data, tokens = [], 0
    for index, item in enumerate(inputs):
        text = item if isinstance(item, str) else " ".join(map(str, item))
        tokens += len(text.split())
        vector = _vector(zlib.crc32(text.encode()), dimensions)
        if size < dimensions:  # matryoshka: the leading values, normalized again
            vector = _normalized(vector[:size])
        value: Any = vector
        if base64_out:
            value = base64.b64encode(struct.pack(f"<{size}f", *vector)).decode()
        data.append({"object": "embedding", "index": index, "embedding": value})
    usage = {"prompt_tokens": tokens, "total_tokens": tokens}
    return orjson.dumps({"object": "list", "data": data, "model": body["model"], "usage": usage})


def models_body(models: list[str], created: int) -> bytes:
    data = [{"id": m, "object": "model", "created": created, "owned_by": "mock"} for m in models]
    return orjson.dumps({"object": "list", "data": data})


def _size(asked: Any, dimensions: int) -> int:
    """The vector size a request's `dimensions` asks for (the model's own when unset), or a
    400 as vLLM gives for one larger than the model's."""
    if asked is None:
        return dimensions
    if not isinstance(asked, int) or isinstance(asked, bool) or not 1 <= asked <= dimensions:
        raise MockRequestError(
            400, f"dimensions must be an integer from 1 to {dimensions}.", param="dimensions"
        )
    return asked


def _vector(key: int, dimensions: int) -> list[float]:
    state, values = key, []
    for _ in range(dimensions):
        state = (state * 6364136223846793005 + 1442695040888963407) & _MASK
        values.append((state >> 11) / float(1 << 52) - 1.0)
    return _normalized(values)


def _normalized(values: list[float]) -> list[float]:
    norm = sum(v * v for v in values) ** 0.5 or 1.0
    return [v / norm for v in values]


def _envelope(p: Plan, *, chunk: bool) -> dict[str, Any]:
    if p.endpoint == "chat":
        kind = "chat.completion.chunk" if chunk else "chat.completion"
    else:
        kind = "text_completion"
    return {
        "id": p.id,
        "object": kind,
        "created": p.created,
        "model": p.model,
        "system_fingerprint": "fp_mock",
    }


def _usage(p: Plan) -> dict[str, Any]:
    completion = sum(len(c) for c in p.choices)
    return {
        "prompt_tokens": p.prompt_tokens,
        "completion_tokens": completion,
        "total_tokens": p.prompt_tokens + completion,
        "prompt_tokens_details": {"cached_tokens": p.cached_tokens},
    }


def _tool_call(name: str, index: int, arguments: str) -> dict[str, Any]:
    function = {"name": name, "arguments": arguments}
    return {"id": f"call_mock_{index}", "type": "function", "function": function}


def _role_choice(p: Plan, index: int) -> dict[str, Any]:
    delta: dict[str, Any] = {"role": "assistant", "content": ""}
    if p.tool:
        delta = {"role": "assistant", "content": None}
        delta["tool_calls"] = [{"index": 0, **_tool_call(p.tool, index, "")}]
    return {"index": index, "delta": delta, "logprobs": None, "finish_reason": None}


def _delta(p: Plan, piece: str) -> dict[str, Any]:
    if p.endpoint == "completion":
        return {"text": piece}
    if p.tool:
        return {"delta": {"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}}
    return {"delta": {"content": piece}}


def _logprobs(p: Plan, pieces: list[str], offset: int) -> dict[str, Any]:
    values = [round(-0.01 - (len(piece) % 5) / 10, 2) for piece in pieces]
    top = p.logprobs or 0
    if p.endpoint == "chat":
        content = []
        for piece, lp in zip(pieces, values, strict=True):
            entry = {"token": piece, "logprob": lp, "bytes": list(piece.encode())}
            content.append({**entry, "top_logprobs": [entry] if top else []})
        return {"content": content}
    offsets, at = [], offset
    for piece in pieces:
        offsets.append(at)
        at += len(piece)
    return {
        "tokens": pieces,
        "token_logprobs": values,
        "top_logprobs": [{t: lp} for t, lp in zip(pieces, values, strict=True)] if top else None,
        "text_offset": offsets,
    }
