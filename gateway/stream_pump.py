"""The streamed answer of one request, from its first chunk to its last byte.

One pump owns the whole life of a stream: it reads the backend's chunks directly, enforces
the stall and total budgets, notes usage and finish reasons on the request's record, feeds
the write-back tap, renders SSE and writes to the ASGI `send`. What happens when the stream
ends, fails, overruns or the client leaves is decided here, in one place.

Every write is bounded too: a client that stops reading fills its connection's send buffer
and the write waits for room. A write still waiting at the total deadline, or after the send
timeout, is given up: the backend call is cancelled, the slot released, and the connection
closed at once (an error event could not be written into the full buffer).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Protocol

from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from budgets.request_budget import RequestBudget
from core.answers import StreamChunk, Usage
from core.backend_errors import BackendError
from core.errors import DeadlineExceeded, GatewayError
from gateway.client_watch import ClientWatch
from gateway.drain import DRAIN, ShuttingDown
from gateway.http_protocol import CONNECTION_ABORT_SCOPE_KEY
from gateway.presentation import StreamRenderer
from gateway.sse import SSE_HEADERS
from gateway.stream_watchdog import SEND, TOTAL, StreamWatchdog
from obs.request_record import RequestRecord

log = logging.getLogger("gateway.stream")

SEND_TIMEOUT_S = 60.0  # as nginx's send_timeout
CLIENT_CLOSED = "client_closed_request"


class ChunkSource(Protocol):
    """A started stream: `first` (already received, or None), then `chunks`."""

    @property
    def first(self) -> StreamChunk | None: ...

    @property
    def chunks(self) -> AsyncIterator[StreamChunk]: ...

    def failed(self, exc: BaseException) -> None:
        """Hear that the stream broke (a replica may be taken out of rotation)."""

    def finished(self, usage: Usage) -> None:
        """Hear that the stream ended with this usage (its replica learns its service time)."""

    async def close(self) -> None:
        """Release the source; before its end this cancels the request upstream."""


class Tap(Protocol):
    """Hears every chunk, and `finish()` once the stream ended cleanly."""

    def add(self, chunk: StreamChunk) -> None: ...

    def finish(self) -> None: ...


class StreamPump(Response):
    """The ASGI response of one streamed answer (a Starlette `Response` by type only)."""

    media_type = "text/event-stream"

    def __init__(
        self,
        source: ChunkSource,
        renderer: StreamRenderer,
        headers: Mapping[str, str],
        budget: RequestBudget,
        record: RequestRecord,
        tap: Tap | None = None,
        on_end: Callable[[], None] | None = None,
        send_timeout_s: float = SEND_TIMEOUT_S,
    ) -> None:
        self.status_code = 200
        self.background = None
        self.init_headers({**SSE_HEADERS, **headers})
        self._source = source
        self._renderer = renderer
        self._budget = budget
        self._record = record
        self._tap = tap
        self._on_end = on_end  # settles the rate limits once the usage is known
        self._held = b""  # the last chunk's event, written together with the end
        self._send_timeout_s = send_timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        task = asyncio.current_task()
        assert task is not None
        # The request's watch (armed when its body was read, stopped by the hot routes), or,
        # for a pump called on its own, one of ours for the stream's life.
        watch = ClientWatch.of(scope)
        own_watch = watch is None
        if watch is None:
            watch = ClientWatch(receive, task)
        watch.start()
        await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})
        budget = self._budget
        watchdog = StreamWatchdog(
            task, budget.budgets.stall_s, budget.total.remaining(), self._send_timeout_s
        )
        ended = False
        stuck = False  # a write was cut short: the client stopped reading
        error: GatewayError | None = None
        try:
            await self._pump(send, watchdog)
            ended = True
        except GatewayError as exc:
            if isinstance(exc, DeadlineExceeded):  # the backend's own deadline (the total)
                exc = exc.having_produced(self._record.streamed_output_tokens)
            self._source.failed(exc)
            error = exc
            log.warning(
                "stream %s failed after the first byte: %s%s",
                self._record.request_id,
                exc.message,
                f" (replica {exc.replica})" if isinstance(exc, BackendError) else "",
            )
        except asyncio.CancelledError:
            stage = watchdog.fired
            if stage is not None:
                task.uncancel()
                stuck = not watchdog.waiting
                if stuck:
                    self._stuck(stage)
                else:
                    error = DeadlineExceeded(
                        budget.total.stage if stage == TOTAL else stage,
                        produced=self._record.streamed_output_tokens,
                    )
                    self._source.failed(error)  # a stalled replica counts as failing
            elif watch.left():  # the client left: a normal end, which the access log says
                self._record.note_failure(CLIENT_CLOSED)
            elif DRAIN.draining:  # the shutdown grace ran out: end with an error event
                task.uncancel()
                error = ShuttingDown("The gateway shut down before the stream ended.")
            else:
                raise
        except Exception as exc:
            self._source.failed(exc)
            log.exception("stream %s failed after the first byte", self._record.request_id)
            error = GatewayError(f"Internal error: {type(exc).__name__}")
        finally:
            watchdog.stop()
            if own_watch:
                watch.stop()
            self._record.note_stream_end(budget.timeline.clock())
            await self._source.close()
            if self._on_end is not None:
                self._on_end()
        if ended and self._tap is not None:
            self._tap.finish()
        if watch.gone or stuck:
            if stuck:
                _abort_connection(scope)
            return
        if error is None:
            tail = self._held + await self._renderer.close()
        else:
            self._note_error(error)
            tail = self._held + await self._renderer.fail(error)
        watchdog.last_write()
        try:
            await send({"type": "http.response.body", "body": tail, "more_body": False})
        except asyncio.CancelledError:
            if watchdog.fired is None:
                raise
            task.uncancel()
            self._stuck(SEND)
            _abort_connection(scope)
        finally:
            watchdog.stop()

    def _stuck(self, stage: str) -> None:
        """A write to the client was given up: past the total a budget overrun (the stream
        ran past its total, as any other), else the client is taken for gone (it read
        nothing for the send timeout: neither the gateway's failure nor the backend's)."""
        log.info(
            "stream %s: the client read nothing for %s; closing the connection",
            self._record.request_id,
            "the rest of the total budget" if stage == TOTAL else f"{self._send_timeout_s:g} s",
        )
        if stage == TOTAL:
            self._note_error(DeadlineExceeded(self._budget.total.stage))
        else:
            self._record.note_failure(CLIENT_CLOSED)

    async def _pump(self, send: Send, watchdog: StreamWatchdog) -> None:
        """Write each chunk as it arrives; the watchdog bounds each wait and each write."""
        chunks = self._source.chunks
        clock = asyncio.get_running_loop().time
        total_at = watchdog.total_at
        chunk = self._source.first  # None when every chunk comes through `chunks`
        while True:
            if chunk is not None:
                event = self._take(chunk)
                if event:
                    await send({"type": "http.response.body", "body": event, "more_body": True})
            now = watchdog.since = clock()
            if now >= total_at:
                produced = self._record.streamed_output_tokens
                raise DeadlineExceeded(self._budget.total.stage, produced=produced)
            watchdog.waiting = True
            try:
                chunk = await anext(chunks)
            except StopAsyncIteration:
                return
            watchdog.since = clock()
            watchdog.waiting = False
            if self._held:
                held, self._held = self._held, b""
                await send({"type": "http.response.body", "body": held, "more_body": True})

    def _take(self, chunk: StreamChunk) -> bytes:
        """Note the chunk on the record and the tap; its SSE event, to write now. The chunk
        with the usage should be the last: its event is held back and goes out with the end
        of the stream, in one write."""
        self._record.note_chunk(chunk)
        if self._tap is not None:
            self._tap.add(chunk)
        event = self._renderer.render(chunk)
        if chunk.usage is None:
            return event
        self._source.finished(chunk.usage)
        self._held = event
        return b""

    def _note_error(self, exc: GatewayError) -> None:
        overrun = exc.stage if isinstance(exc, DeadlineExceeded) else None
        self._record.note_failure(exc.code or exc.type, overrun=overrun)


def _abort_connection(scope: Scope) -> None:
    """Close the client's connection at once, dropping what is buffered; a server without
    the hook closes it itself when the response ends unfinished."""
    abort: Callable[[], None] | None = scope.get(CONNECTION_ABORT_SCOPE_KEY)
    if abort is not None:
        abort()
