"""uvicorn's httptools protocol with the edge's limits: a bounded request head (431 past it),
a deadline on receiving it (408), a cap on connections per worker (503), and the one Host
header RFC 9112 §3.2 requires (400: none in HTTP/1.1, an empty one, or two).

httptools buffers a request line and headers of any size (a 1 MB header, or 20,000 of them, is
parsed and handed to the app), so a client could make every worker hold as much as it sends.
This subclass counts the bytes of the request line and headers it parses, the bytes it holds
while a head is incomplete, and the headers; past a limit it answers 431 Request Header Fields
Too Large and closes the connection. The byte limit travels in uvicorn's
`h11_max_incomplete_event_size`, the setting that bounds the same thing for h11, so the class
can be named by import path (which uvicorn's worker processes need) and still be configured.

uvicorn bounds no other part of a connection's life before its request: `timeout_keep_alive`
runs only between a response and the first byte of the next request, and `limit_concurrency`
is checked only once a head is complete. So a connection that sends nothing, or trickles its
head a byte at a time, stayed open for good (slow loris). Here a head must arrive whole within
`EdgeConfig.head_timeout_s` of the connection opening, or of its first byte on a kept-alive
connection: past it, a started head is answered 408 and a connection that sent nothing is
closed. A connection beyond `EdgeConfig.max_connections` is answered 503 as soon as it is
accepted, so the worker never runs out of descriptors and a refused client learns at once.

An answer given before its request's body has all arrived (the app's 408, 413, 415, a 401
before the body; the refusals above) says `Connection: close` and ends the connection with a
bounded lingering close (`gateway/lingering_close.py`): uvicorn would keep such a connection
open and read and drop the rest of the body for as long as the client sends it, with no timer
running (a byte after the answer stops the keep-alive timeout). While a request's body is
arriving, its cycle's `keep_alive` is off and its transport is an `EarlyAnswerTransport`;
both are put back once the body is in, so an answer given after it is untouched.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.config import Config
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from gateway.edge_refusals import (
    BAD_HOST,
    HEAD_TIMEOUT,
    HEAD_TOO_LARGE,
    INVALID_HTTP,
    TOO_MANY_CONNECTIONS,
    Refusal,
)
from gateway.lingering_close import (
    LINGER_MAX_BYTES,
    EarlyAnswerTransport,
    Linger,
    LingerBounds,
)
from gateway.request_id import new_request_id
from obs.logs import CLOSE_TIMEOUT_S, flush_logs_before_sigterm

MAX_HEADER_COUNT = 256  # Envoy allows 100 by default, Node 2000; 256 leaves proxies room
HEAD_TIMEOUT_S = 5.0
MAX_CONNECTIONS = 4096
CONNECTION_ABORT_SCOPE_KEY = "gateway.abort_connection"
"""A request's scope holds under this key a callable that closes its connection at once,
dropping what is still buffered (a response that cannot be finished: the client stopped
reading, so neither an error event nor a clean end can be written)."""
EXIT_LOG_FLUSH_S = CLOSE_TIMEOUT_S
"""How long a SIGTERM leaves the queued log lines to reach stderr before the process dies of
it (only a stalled stderr takes that long; a stage of the shutdown's bound, `gateway.drain`)."""


class EdgeConfig(Config):
    """uvicorn's `Config` plus what `BoundedHttpToolsProtocol` reads beyond it (a subclass,
    so it reaches spawned workers as uvicorn's own settings do)."""

    def __init__(
        self,
        app: Any,
        *,
        head_timeout_s: float = HEAD_TIMEOUT_S,
        max_connections: int = MAX_CONNECTIONS,
        linger_max_bytes: int = LINGER_MAX_BYTES,
        **kwargs: Any,
    ) -> None:
        super().__init__(app, **kwargs)
        self.head_timeout_s = head_timeout_s
        self.max_connections = max_connections
        self.linger_max_bytes = linger_max_bytes

    def configure_logging(self) -> None:
        """uvicorn's, then: a SIGTERM that ends the process first writes out the queued log
        lines, for up to `EXIT_LOG_FLUSH_S`. uvicorn re-raises
        the SIGTERM it caught once it has shut down, so the process dies of it and `atexit`
        never runs; this runs in every worker too (each configures its logging first)."""
        super().configure_logging()
        flush_logs_before_sigterm(EXIT_LOG_FLUSH_S)


class _Refused(Exception):
    """Raised from a parser callback to stop parsing a request that is refused."""


class BoundedHttpToolsProtocol(HttpToolsProtocol):
    """`HttpToolsProtocol` that refuses request heads over a byte or header-count limit or
    slower than the head timeout, and connections over the cap, and that ends a connection
    answered before its request's body was in with a lingering close."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        config = self.config
        self._max_head_bytes: int = config.h11_max_incomplete_event_size or 65536
        self._head_timeout_s: float = getattr(config, "head_timeout_s", HEAD_TIMEOUT_S)
        self._max_connections: int = getattr(config, "max_connections", MAX_CONNECTIONS)
        self.limit_concurrency = None  # uvicorn's check, after each head: ours is at accept
        self._in_head = True
        self._head_bytes = 0
        self._header_count = 0
        self._parsed_bytes = 0
        self._hosts = 0  # Host headers of this head, an empty one counting 2 (RFC 9112 §3.2)
        self._boundaries = 0  # heads and messages completed
        self._refusal: Refusal | None = None
        # When the head awaited now began to be awaited (loop clock), None while none is; and
        # whether any byte of it came. One timer per connection checks them, lazily.
        self._head_since: float | None = None
        self._head_started = False
        self._head_timer: asyncio.TimerHandle | None = None
        linger_bytes: int = getattr(config, "linger_max_bytes", LINGER_MAX_BYTES)
        self._linger_bounds = LingerBounds(self._head_timeout_s, max_bytes=linger_bytes)
        self._linger: Linger | None = None
        self._early_transport: EarlyAnswerTransport | None = None
        self._keep_alive = True  # the keep-alive of the request whose body is arriving

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._early_transport = EarlyAnswerTransport(transport, self._linger_close)
        if len(self.connections) > self._max_connections:
            self.connections.discard(self)  # closing: it holds no place meanwhile
            self._refusal = TOO_MANY_CONNECTIONS
            self._refuse()
            return
        self._head_since = self.loop.time()
        self._head_timer = self.loop.call_later(self._head_timeout_s, self._check_head)

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_head_timer()
        if self._linger is not None:
            self._linger.cancel()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._linger is not None:  # answered: what still comes is dropped, to a bound
            self._linger.discard(len(data))
            return
        if self._refusal is not None:
            return
        boundaries = self._boundaries
        super().data_received(data)
        if self._refusal is not None:
            self._refuse()
        elif self._in_head and self._boundaries == boundaries:
            # A head is awaited and this chunk completed neither a head nor a message: all of
            # it is head. (A chunk that completed one is not counted, so bodies never are.)
            self._head_bytes += len(data)
            if self._head_bytes > self._max_head_bytes:
                self._refusal = HEAD_TOO_LARGE
                self._refuse()

    def send_400_response(self, msg: str) -> None:
        # A parser error: ours (`_Refused` from a callback, the refusal already chosen) or the
        # parser's own. `data_received` answers it once the parser returns.
        if self._refusal is None:
            self._refusal = INVALID_HTTP

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._in_head = True
        self._header_count = 0
        self._parsed_bytes = 0
        self._hosts = 0
        self._head_started = True
        if self._head_since is None:  # a kept-alive connection: the head's time starts now
            self._head_since = self.loop.time()

    def on_url(self, url: bytes) -> None:
        self._parsed_bytes += len(url)
        self._check_parsed()
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._header_count += 1
        self._parsed_bytes += len(name) + len(value) + 4  # ": " and CRLF
        if self._header_count > MAX_HEADER_COUNT or self._parsed_bytes > self._max_head_bytes:
            self._refusal = HEAD_TOO_LARGE
            raise _Refused
        # uvicorn's own `on_header`, inlined: this runs for every header of every request.
        name = name.lower()
        if name == b"host":
            self._hosts += 1 if value else 2
        elif name == b"expect" and value.lower() == b"100-continue":
            self.expect_100_continue = True
        self.headers.append((name, value))

    def _check_parsed(self) -> None:
        # A head that arrives within one read completes before `data_received` can count it.
        if self._header_count > MAX_HEADER_COUNT or self._parsed_bytes > self._max_head_bytes:
            self._refusal = HEAD_TOO_LARGE
            raise _Refused

    def on_headers_complete(self) -> None:
        self._in_head = False
        self._boundaries += 1
        self._head_since = None
        self._head_started = False
        hosts = self._hosts
        # Exactly one non-empty Host; HTTP/1.0 may send none.
        if hosts != 1 and (hosts > 1 or self.parser.get_http_version() != "1.0"):
            self._refusal = BAD_HOST
            raise _Refused
        self.scope[CONNECTION_ABORT_SCOPE_KEY] = self.transport.abort  # type: ignore[literal-required]
        previous = self.cycle
        super().on_headers_complete()
        cycle = self.cycle
        if cycle is not previous:  # (none is made for a WebSocket upgrade)
            # Until the body is in, an answer says `Connection: close` and lingers.
            self._keep_alive = cycle.keep_alive
            cycle.keep_alive = False
            cycle.transport = self._early_transport  # type: ignore[assignment]

    def shutdown(self) -> None:
        self._keep_alive = False  # a body still arriving keeps no connection either
        super().shutdown()

    def on_message_complete(self) -> None:
        super().on_message_complete()
        cycle = self.cycle
        if cycle is not None and not cycle.response_started:  # in before any answer: as it was
            cycle.keep_alive = self._keep_alive
            cycle.transport = self.transport
        self._in_head = True
        self._head_bytes = 0
        self._boundaries += 1

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self._linger is not None:  # no keep-alive timer: the linger's bounds hold
            self._unset_keepalive_if_required()

    def _check_head(self) -> None:
        """The connection's head timer: refuse a head awaited too long, else check again when
        it would be (or a timeout from now while no head is awaited)."""
        self._head_timer = None
        if self.transport.is_closing() or self._refusal is not None or self._linger is not None:
            return
        now = self.loop.time()
        since = self._head_since
        if since is not None:
            cycle = self.cycle
            if cycle is not None and not cycle.response_complete:
                # A pipelined head waits behind the answer before it: its time starts later.
                self._head_since = since = now
            elif now - since >= self._head_timeout_s:
                self._head_timed_out()
                return
        wait = self._head_timeout_s if since is None else since + self._head_timeout_s - now
        self._head_timer = self.loop.call_later(wait, self._check_head)

    def _head_timed_out(self) -> None:
        if self._head_started:
            self._refusal = HEAD_TIMEOUT
            self._refuse()
        else:  # nothing sent: nothing to answer, as when a kept-alive connection idles out
            self.transport.close()

    def _refuse(self) -> None:
        """Answer the refusal, then close with a lingering close."""
        refusal = self._refusal
        assert refusal is not None
        transport: asyncio.Transport = self.transport
        if transport.is_closing():
            return
        since = self._head_since
        elapsed = 0.0 if since is None else max(0.0, self.loop.time() - since)
        request_id = new_request_id()
        default_headers = self.server_state.default_headers
        transport.write(refusal.response(request_id, elapsed, default_headers))
        self._linger_close()
        refusal.report(self.app_state, request_id, elapsed)

    def _linger_close(self) -> None:
        """End the connection, once its answer is written, with a lingering close: our side
        at once, the connection once the client is silent, or sent too much, or too late."""
        if self._linger is not None or self.transport.is_closing():
            return
        self._stop_head_timer()
        self._unset_keepalive_if_required()
        self.flow.resume_reading()  # reading must go on to drop what comes
        self._linger = Linger(self.transport, self.loop, self._linger_bounds)

    def _stop_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None
