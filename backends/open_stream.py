"""A started backend stream, handed from the fleet to the one consumer that pumps it."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, Callable

from budgets.slots import Slot
from core.answers import StreamChunk, Usage

Finished = Callable[[Usage], None]  # hears a stream's usage once it ended cleanly
Failed = Callable[[BaseException], None]  # hears why a stream broke


class OpenStream:
    """A started backend stream whose first chunk has arrived; it holds a slot on its replica
    until `close()`.

    Its one consumer reads `first`, then `chunks` directly (no wrapping generator per chunk),
    reports a failure with `failed()` (its replica may be ejected), may report a clean end
    with `finished(usage)` (the replica's service estimate learns from it), and calls
    `close()` exactly once at the end, which releases the slot and, if the stream had not
    ended, cancels the request upstream. Only the first of the two reports counts.
    """

    __slots__ = ("_closed", "_failed", "_finished", "_slot", "chunks", "first")

    def __init__(
        self,
        slot: Slot,
        first: StreamChunk | None,
        chunks: AsyncGenerator[StreamChunk, None],
        finished: Finished | None = None,
        failed: Failed | None = None,
    ) -> None:
        self._slot = slot
        self._finished = finished
        self._failed = failed
        self._closed = False
        self.first = first
        self.chunks = chunks

    def failed(self, exc: BaseException) -> None:
        """The stream broke with `exc`."""
        report = self._failed
        self._failed = self._finished = None
        if report is not None:
            report(exc)

    def finished(self, usage: Usage) -> None:
        """The stream ended cleanly with this usage (call before `close()`)."""
        report = self._finished
        self._failed = self._finished = None
        if report is not None and not self._closed:
            report(usage)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._slot.release()
        await close_quietly(self.chunks)

    async def iterate(self) -> AsyncGenerator[StreamChunk, None]:
        """The whole stream as one generator, closed at its end (for a shared, coalesced
        stream, whose pump fans chunks out to several responses)."""
        usage: Usage | None = None
        try:
            if self.first is not None:
                usage = self.first.usage
                yield self.first
            async for chunk in self.chunks:
                if chunk.usage is not None:
                    usage = chunk.usage
                yield chunk
            if usage is not None:
                self.finished(usage)
        except BaseException as exc:
            self.failed(exc)
            raise
        finally:
            await self.close()


async def close_quietly(chunks: AsyncGenerator[StreamChunk, None]) -> None:
    with contextlib.suppress(Exception):
        await chunks.aclose()
