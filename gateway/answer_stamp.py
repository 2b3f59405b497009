"""`x-request-id` and `Server-Timing` on every answer of the Starlette app: the model list and
lookups, stored responses, probes, /metrics, and the errors its handlers render. (The
generation routes bypass it and set both themselves, on the hot path.)"""

from __future__ import annotations

import time

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from budgets.deadline import Clock
from gateway.observing import RECORD_SCOPE_KEY
from obs.request_record import RequestRecord


def server_timing(record: RequestRecord, now: float) -> str:
    """The request's stages and total, or only the total when it ran no staged work."""
    if record.timeline is not None:
        return record.timeline.server_timing(total=True)
    return f"total;dur={(now - record.started) * 1000:.2f}"


class AnswerStamp:
    """Pure ASGI: adds the two headers to the response start when the endpoint did not."""

    def __init__(self, app: ASGIApp, clock: Clock = time.monotonic) -> None:
        self._app = app
        self._clock = clock

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        record: RequestRecord | None = scope.get(RECORD_SCOPE_KEY)
        if record is None:
            await self._app(scope, receive, send)
            return
        clock = self._clock

        async def stamped(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", ()))
                names = {name for name, _ in headers}
                if b"x-request-id" not in names:
                    headers.append((b"x-request-id", record.request_id.encode()))
                if b"server-timing" not in names:
                    headers.append((b"server-timing", server_timing(record, clock()).encode()))
                message = {**message, "headers": headers}
            await send(message)

        await self._app(scope, receive, stamped)
