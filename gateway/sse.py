"""Server-sent events: a started stream rendered as SSE, failures after the first byte as an
error event, always closed by `data: [DONE]`."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Iterable, Mapping

from starlette.responses import Response, StreamingResponse

from backends.types import StreamChunk
from gateway.errors import GatewayError
from gateway.render import DONE_EVENT, ChunkRenderer, error_event

log = logging.getLogger("gateway.sse")

SSE_HEADERS = {"cache-control": "no-cache", "x-accel-buffering": "no"}


def sse_response(
    stream: AsyncIterator[StreamChunk], renderer: ChunkRenderer, headers: Mapping[str, str]
) -> StreamingResponse:
    request_id = headers.get("x-request-id", "")
    return StreamingResponse(
        _events(stream, renderer, request_id),
        media_type="text/event-stream",
        headers={**SSE_HEADERS, **headers},
    )


def replay_response(
    chunks: Iterable[StreamChunk], renderer: ChunkRenderer, headers: Mapping[str, str]
) -> Response:
    """A cached answer as one SSE body: every event is ready, so it goes out in one write."""
    body = b"".join(renderer.render(chunk) for chunk in chunks) + DONE_EVENT
    return Response(body, media_type="text/event-stream", headers={**SSE_HEADERS, **headers})


async def _events(
    stream: AsyncIterator[StreamChunk], renderer: ChunkRenderer, request_id: str
) -> AsyncIterator[bytes]:
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
