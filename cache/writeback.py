"""A bounded background queue that runs cache writes off the response path."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable

log = logging.getLogger("gateway.cache.writeback")

Job = Callable[[], Awaitable[object]]


class WriteBackQueue:
    """Runs zero-argument async jobs on `workers` background tasks.

    `submit` never blocks and never raises: a full or closed queue drops the job and counts
    it. A job that raises or outlives `job_timeout_s` is logged on one line and counted as
    failed; failure lines are rate-limited to one per `log_interval_s` so a dead Redis does
    not flood the log.
    """

    def __init__(
        self,
        *,
        maxsize: int = 1024,
        workers: int = 2,
        job_timeout_s: float = 5.0,
        log_interval_s: float = 10.0,
        name: str = "write-back",
    ) -> None:
        if maxsize < 1 or workers < 1:
            raise ValueError("maxsize and workers must be at least 1")
        if job_timeout_s <= 0:
            raise ValueError("job_timeout_s must be positive")
        self.name = name
        self._queue: asyncio.Queue[Job] = asyncio.Queue(maxsize)
        self._workers = workers
        self._job_timeout_s = job_timeout_s
        self._log_interval_s = log_interval_s
        self._tasks: list[asyncio.Task[None]] = []
        self._closed = False
        self._running = 0
        self._last_log = -float("inf")
        self._unlogged = 0
        self.submitted = 0
        self.written = 0
        self.failed = 0
        self.dropped = 0

    @property
    def depth(self) -> int:
        """Jobs waiting for a worker (not counting those running)."""
        return self._queue.qsize()

    @property
    def running(self) -> int:
        return self._running

    @property
    def closed(self) -> bool:
        return self._closed

    def start(self) -> None:
        """Create the workers in the running loop; a second call does nothing."""
        if self._tasks or self._closed:
            return
        self._tasks = [
            asyncio.create_task(self._work(), name=f"{self.name}-{i}") for i in range(self._workers)
        ]

    def submit(self, job: Job) -> bool:
        """Queue `job`; False (and counted as dropped) when the queue is full or closed."""
        if self._closed or self._queue.full():
            self.dropped += 1
            return False
        self._queue.put_nowait(job)
        self.submitted += 1
        return True

    async def drain(self, timeout: float) -> None:
        """Stop accepting, let queued jobs finish for up to `timeout` seconds, then cancel
        what is left and count it as dropped."""
        self._closed = True
        if self._tasks:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout):
                    await self._queue.join()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []
        while not self._queue.empty():
            self._queue.get_nowait()
            self._queue.task_done()
            self.dropped += 1

    async def _work(self) -> None:
        queue = self._queue
        while True:
            job = await queue.get()
            self._running += 1
            try:
                async with asyncio.timeout(self._job_timeout_s):
                    await job()
            except asyncio.CancelledError as exc:
                if _cancelling():
                    self.dropped += 1
                    raise
                # The job's own awaitable was cancelled, not this worker: keep working.
                self.failed += 1
                self._log_failure(exc)
            except Exception as exc:
                self.failed += 1
                self._log_failure(exc)
            else:
                self.written += 1
            finally:
                self._running -= 1
                queue.task_done()
            del job  # let the job's closure (and its payload) go while waiting

    def _log_failure(self, exc: BaseException) -> None:
        now = time.monotonic()
        if now - self._last_log < self._log_interval_s:
            self._unlogged += 1
            return
        more = f" ({self._unlogged} more since the last report)" if self._unlogged else ""
        reason = "timed out" if isinstance(exc, TimeoutError) else f"{type(exc).__name__}: {exc}"
        log.warning("%s job failed: %s%s", self.name, reason, more)
        self._last_log = now
        self._unlogged = 0


def _cancelling() -> bool:
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0
