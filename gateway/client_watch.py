"""Watches the client of one request, from the end of its body to the end of its answer.

ASGI tells a server-side handler that its client left only through `receive()`, which
nothing else calls once the body has been read. One watcher per request does: when the
client leaves it cancels the request's task wherever that task waits (the cache, an
admission queue, the first token, the stream), so the backend call is cancelled and the
engine told to abort at once, not when some budget runs out.

The watcher is a task, about 12 us of CPU per request; a request that ends within
`QUIET_S` of its body (a cache hit, a short answer) never starts one, and one whose client
leaves sooner is noticed at most that much later.
"""

from __future__ import annotations

import asyncio
import logging

from starlette.types import Receive, Scope

log = logging.getLogger("gateway")

CLIENT_WATCH_SCOPE_KEY = "gateway.client_watch"
QUIET_S = 0.02


class ClientWatch:
    """Cancels `task` when the client disconnects, between `start()` and `stop()`.

    The owner calls `arm()` (or `start()`) once `receive` is free (the body has been read),
    `stop()` when the response is written (before anything else may yield, so the watcher
    never sees the server's own end of the response as a disconnect), and `left()` on a
    `CancelledError`: true when the client's departure caused it, whose cancellation is then
    consumed.
    """

    __slots__ = ("_receive", "_stopped", "_task", "_timer", "_uncancelled", "_watcher", "gone")

    def __init__(self, receive: Receive, task: asyncio.Task[object]) -> None:
        self._receive = receive
        self._task = task
        self._watcher: asyncio.Task[None] | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._stopped = False
        self._uncancelled = False
        self.gone = False

    @classmethod
    def of(cls, scope: Scope) -> ClientWatch | None:
        """The watch the hot routes keep in the request's scope, if any."""
        watch: ClientWatch | None = scope.get(CLIENT_WATCH_SCOPE_KEY)
        return watch

    @property
    def started(self) -> bool:
        return self._watcher is not None

    def arm(self, delay_s: float = QUIET_S) -> None:
        """Start watching in `delay_s`, unless started or stopped before."""
        if self._timer is None and self._watcher is None and not self._stopped:
            self._timer = asyncio.get_running_loop().call_later(delay_s, self.start)

    def start(self) -> None:
        """Begin watching now; idempotent."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._watcher is None and not self._stopped:
            self._watcher = asyncio.create_task(self._watch())

    def stop(self) -> None:
        self._stopped = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        watcher = self._watcher
        if watcher is not None and not watcher.done():
            watcher.cancel()

    def left(self) -> bool:
        """Whether the client left; the first call after it did consumes the cancellation
        that the watcher delivered to the task."""
        if not self.gone:
            return False
        if not self._uncancelled:
            self._uncancelled = True
            self._task.uncancel()
        return True

    async def _watch(self) -> None:
        receive = self._receive
        try:
            while (await receive())["type"] != "http.disconnect":
                pass
        except Exception:  # a server that cannot say: stop watching, never fail the request
            log.debug("watching the client failed", exc_info=True)
            return
        self.gone = True
        self._task.cancel()
