"""How a connection ends when it is answered before its request was read whole: a lingering
close, as nginx does it (`lingering_close`), with tighter bounds.

An answer given while the request's body is still arriving (408: the parse budget ran out;
413: a body over the limit; 415; a 401 before the body; one of the protocol's own refusals)
cannot leave the connection open for a next request: the rest of the body would have to be
read and dropped first, for as long as the client sends it. Nor can the connection just be
closed: closing a socket with unread bytes resets it, and the client, still sending, may then
lose the answer. So the answer says `Connection: close`, our side is shut after it (FIN), and
what the client still sends is read and dropped, until the first of:

- `idle_s` (1 s; nginx's `lingering_timeout` is 5 s) pass with nothing from the client: a
  client sending its body keeps the line busy, so one that falls silent has nothing more;
- `time_s` pass since the answer (the head timeout, `GATEWAY_HEADER_TIMEOUT_S`, 5 s;
  nginx's `lingering_time` is 30 s): no connection is held longer after its answer than a
  next request's head may take to arrive;
- more than `max_bytes` have been dropped (twice the body limit, `GATEWAY_MAX_BODY_BYTES`):
  a body up to twice the limit, sent whole before the client reads, still gets its 413, and
  an endless one costs what two accepted bodies would (nginx bounds only the time: at
  loopback speed 30 s are tens of GiB).

The client has then either read its answer or will not; the connection is closed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

LINGER_IDLE_S = 1.0
LINGER_TIME_S = 5.0
LINGER_MAX_BYTES = 8 * 1024 * 1024  # twice the default body limit


@dataclass(frozen=True, slots=True)
class LingerBounds:
    """When a lingering close gives up on the client: silence, time since the answer, or
    bytes dropped."""

    time_s: float = LINGER_TIME_S
    idle_s: float = LINGER_IDLE_S
    max_bytes: int = LINGER_MAX_BYTES


class Linger:
    """One connection's lingering close, from the end of its answer: our side shut, what
    the client sends dropped (`discard`), the transport closed at the first bound reached."""

    __slots__ = ("_bounds", "_deadline", "_dropped", "_last", "_loop", "_timer", "_transport")

    def __init__(
        self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop, bounds: LingerBounds
    ) -> None:
        self._transport = transport
        self._loop = loop
        self._bounds = bounds
        now = loop.time()
        self._deadline = now + bounds.time_s
        self._last = now
        self._dropped = 0
        if transport.can_write_eof():
            transport.write_eof()  # FIN once the answer is out: the client sees its end
        self._timer: asyncio.TimerHandle | None = loop.call_at(
            min(self._deadline, now + bounds.idle_s), self._check
        )

    def discard(self, size: int) -> None:
        """The client sent `size` more bytes, dropped unread."""
        self._dropped += size
        if self._dropped > self._bounds.max_bytes:
            self.close()
        else:
            self._last = self._loop.time()

    def close(self) -> None:
        """End it now."""
        self.cancel()
        self._transport.close()

    def cancel(self) -> None:
        """Stop the timer (the connection is gone)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _check(self) -> None:
        # One timer, checked lazily: bytes arriving only move `_last`.
        self._timer = None
        wake = min(self._deadline, self._last + self._bounds.idle_s)
        if self._loop.time() >= wake:
            self._transport.close()
        else:
            self._timer = self._loop.call_at(wake, self._check)


class EarlyAnswerTransport(asyncio.Transport):
    """What a request's answer is written to while its body is still arriving: the
    connection's transport, except that closing it (uvicorn does, right after an answer that
    says `Connection: close`) calls `linger` instead."""

    __slots__ = ("_linger", "_lingering", "_transport")

    def __init__(self, transport: asyncio.Transport, linger: Callable[[], Any]) -> None:
        super().__init__()
        self._transport = transport
        self._linger = linger
        self._lingering = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self._transport.write(data)

    def is_closing(self) -> bool:
        return self._lingering or self._transport.is_closing()

    def close(self) -> None:
        if not self._lingering:
            self._lingering = True
            self._linger()
