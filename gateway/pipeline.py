"""Orders the stages of a request: deadline, backend call (peeking the first chunk), render."""

from __future__ import annotations

import asyncio
import base64
import logging
import os
import struct
import time
from collections.abc import AsyncIterator, Mapping

import orjson
from starlette.responses import Response, StreamingResponse

from backends.base import EmbeddingCall, GenerationRequest
from backends.fleet import Fleet
from backends.types import Endpoint, StreamChunk
from budgets.deadline import Deadline
from gateway.errors import GatewayError
from gateway.protocol import (
    ChatCompletionRequest,
    CompletionRequest,
    EmbeddingRequest,
    parse_request,
)
from gateway.render import DONE_EVENT, ChunkRenderer, completion_body, error_event
from gateway.settings import Settings

log = logging.getLogger("gateway.pipeline")

_PROPAGATED_HEADERS = ("traceparent", "tracestate")
_SSE_HEADERS = {"cache-control": "no-cache", "x-accel-buffering": "no"}


def new_request_id() -> str:
    return os.urandom(12).hex()


class Pipeline:
    """The request path shared by every generation endpoint."""

    def __init__(self, settings: Settings, fleet: Fleet) -> None:
        self._settings = settings
        self._fleet = fleet

    async def generate(
        self, endpoint: Endpoint, raw: bytes, headers: Mapping[str, str], request_id: str
    ) -> Response:
        deadline = Deadline.after(self._settings.budget_total_s, "total")
        body: ChatCompletionRequest | CompletionRequest
        if endpoint == "chat":
            body = parse_request(raw, ChatCompletionRequest)
        else:
            body = parse_request(raw, CompletionRequest)
        self._fleet.replicas(body.model)  # 404 before any other work
        request = GenerationRequest(
            endpoint=endpoint,
            body=body,
            raw=raw,
            request_id=request_id,
            headers=_propagated(headers),
        )
        response_id = ("chatcmpl-" if endpoint == "chat" else "cmpl-") + request_id
        created = int(time.time())
        if not body.stream:
            completion = await self._fleet.complete(request, deadline)
            return Response(
                completion_body(
                    endpoint,
                    completion,
                    response_id=response_id,
                    created=created,
                    model=body.model,
                    fingerprint=self._settings.system_fingerprint,
                ),
                media_type="application/json",
                headers={"x-request-id": request_id},
            )
        first_chunk_deadline = deadline.child(self._settings.budget_ttft_s, "ttft")
        stream = await self._fleet.open_stream(request, deadline, first_chunk_deadline)
        renderer = ChunkRenderer(
            endpoint,
            response_id=response_id,
            created=created,
            model=body.model,
            fingerprint=self._settings.system_fingerprint,
            include_usage=body.include_usage,
        )
        return StreamingResponse(
            _sse(stream, renderer, request_id),
            media_type="text/event-stream",
            headers={**_SSE_HEADERS, "x-request-id": request_id},
        )

    async def embed(self, raw: bytes, headers: Mapping[str, str], request_id: str) -> Response:
        deadline = Deadline.after(self._settings.budget_total_s, "total")
        body = parse_request(raw, EmbeddingRequest)
        self._fleet.replicas(body.model)
        call = EmbeddingCall(
            body=body, raw=raw, request_id=request_id, headers=_propagated(headers)
        )
        result = await self._fleet.embed(call, deadline)
        encode = _base64_floats if body.encoding_format == "base64" else None
        data = [
            {"object": "embedding", "index": i, "embedding": encode(v) if encode else v}
            for i, v in enumerate(result.vectors)
        ]
        payload = {
            "object": "list",
            "data": data,
            "model": body.model,
            "usage": {"prompt_tokens": result.prompt_tokens, "total_tokens": result.prompt_tokens},
        }
        return Response(
            orjson.dumps(payload, option=orjson.OPT_SERIALIZE_NUMPY),
            media_type="application/json",
            headers={"x-request-id": request_id},
        )


def _base64_floats(vector: list[float]) -> str:
    """OpenAI's base64 encoding: little-endian float32 values."""
    return base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()


def _propagated(headers: Mapping[str, str]) -> dict[str, str]:
    return {name: headers[name] for name in _PROPAGATED_HEADERS if name in headers}


async def _sse(
    stream: AsyncIterator[StreamChunk], renderer: ChunkRenderer, request_id: str
) -> AsyncIterator[bytes]:
    """SSE events of an already-started stream; a later failure becomes an error event."""
    try:
        async for chunk in stream:
            event = renderer.render(chunk)
            if event:
                yield event
    except GatewayError as exc:
        log.warning("stream %s failed after the first byte: %s", request_id, exc)
        yield error_event(exc.to_json())
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        log.exception("stream %s failed after the first byte", request_id)
        yield error_event(GatewayError(f"Internal error: {type(exc).__name__}").to_json())
    finally:
        aclose = getattr(stream, "aclose", None)
        if aclose is not None:
            await aclose()
    yield DONE_EVENT
