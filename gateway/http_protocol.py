"""uvicorn's httptools protocol with a bound on the request head: 431 past it.

httptools buffers a request line and headers of any size (a 1 MB header, or 20,000 of them, is
parsed and handed to the app), so a client could make every worker hold as much as it sends.
This subclass counts the bytes of the request line and headers it parses, the bytes it holds
while a head is incomplete, and the headers; past a limit it answers 431 Request Header Fields
Too Large and closes the connection. The byte limit travels in uvicorn's
`h11_max_incomplete_event_size`, the setting that bounds the same thing for h11, so the class
can be named by import path (which uvicorn's worker processes need) and still be configured.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

_LINGER_S = 2.0
MAX_HEADER_COUNT = 256  # Envoy allows 100 by default, Node 2000; 256 leaves proxies room
_RESPONSE = (
    b"HTTP/1.1 431 Request Header Fields Too Large\r\n"
    b"content-type: application/json\r\n"
    b"connection: close\r\n"
    b"content-length: %d\r\n\r\n%s"
)
_BODY = (
    b'{"error":{"message":"the request head (request line and headers) is over the '
    b'gateway\'s limit","type":"invalid_request_error","param":null,'
    b'"code":"request_header_fields_too_large"}}'
)


class _HeadTooLarge(Exception):
    """Raised from a parser callback to stop parsing a head over the limits."""


class BoundedHttpToolsProtocol(HttpToolsProtocol):
    """`HttpToolsProtocol` that refuses request heads over a byte or header-count limit."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._max_head_bytes: int = self.config.h11_max_incomplete_event_size or 65536
        self._in_head = True
        self._head_bytes = 0
        self._header_count = 0
        self._parsed_bytes = 0
        self._boundaries = 0  # heads and messages completed
        self._refused = False

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return
        boundaries = self._boundaries
        super().data_received(data)
        if self._refused:
            self._refuse()
        elif self._in_head and self._boundaries == boundaries:
            # A head is awaited and this chunk completed neither a head nor a message: all of
            # it is head. (A chunk that completed one is not counted, so bodies never are.)
            self._head_bytes += len(data)
            if self._head_bytes > self._max_head_bytes:
                self._refused = True
                self._refuse()

    def send_400_response(self, msg: str) -> None:
        # A `_HeadTooLarge` from a callback reaches uvicorn as a parser error: answer it here.
        if not self._refused:
            super().send_400_response(msg)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._in_head = True
        self._header_count = 0
        self._parsed_bytes = 0

    def on_url(self, url: bytes) -> None:
        self._parsed_bytes += len(url)
        self._check_parsed()
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._header_count += 1
        self._parsed_bytes += len(name) + len(value) + 4  # ": " and CRLF
        if self._header_count > MAX_HEADER_COUNT or self._parsed_bytes > self._max_head_bytes:
            self._refused = True
            raise _HeadTooLarge
        # uvicorn's own `on_header`, inlined: this runs for every header of every request.
        name = name.lower()
        if name == b"expect" and value.lower() == b"100-continue":
            self.expect_100_continue = True
        self.headers.append((name, value))

    def _check_parsed(self) -> None:
        # A head that arrives within one read completes before `data_received` can count it.
        if self._header_count > MAX_HEADER_COUNT or self._parsed_bytes > self._max_head_bytes:
            self._refused = True
            raise _HeadTooLarge

    def on_headers_complete(self) -> None:
        self._in_head = False
        self._boundaries += 1
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._in_head = True
        self._head_bytes = 0
        self._boundaries += 1

    def _refuse(self) -> None:
        """Answer 431, then close: our side at once, the connection after a linger during
        which what the client still sends is read and dropped (closing with unread data
        would reset the connection, and the client could lose the answer)."""
        transport: asyncio.Transport = self.transport
        if transport.is_closing():
            return
        transport.write(_RESPONSE % (len(_BODY), _BODY))
        if transport.can_write_eof():
            transport.write_eof()
        self.loop.call_later(_LINGER_S, transport.close)
