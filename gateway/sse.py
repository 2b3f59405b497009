"""Server-sent events: the headers of every event stream, and a cached answer replayed as
one."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from starlette.responses import Response

from core.answers import StreamChunk
from gateway.presentation import StreamRenderer

SSE_HEADERS = {"cache-control": "no-cache", "x-accel-buffering": "no"}


async def replay_response(
    chunks: Iterable[StreamChunk], renderer: StreamRenderer, headers: Mapping[str, str]
) -> Response:
    """A cached answer as one SSE body: every event is ready, so it goes out in one write."""
    body = b"".join(renderer.render(chunk) for chunk in chunks)
    body += await renderer.close()
    return Response(body, media_type="text/event-stream", headers={**SSE_HEADERS, **headers})
