"""Incremental Server-Sent Events decoding: bytes as they arrive in, event data payloads out."""

from __future__ import annotations

from dataclasses import dataclass

_BOM = b"\xef\xbb\xbf"


class SSEError(ValueError):
    """The stream is not valid Server-Sent Events (an over-long line)."""


@dataclass(frozen=True, slots=True)
class ErrorEvent:
    """The data of an event typed `event: error`: a failure the upstream reports in-band."""

    data: bytes


class SSEDecoder:
    """Splits an SSE byte stream into the `data` payload of each event.

    Feed it reads of any size: events may be split across reads or several may share one.
    Lines may end in `\\n`, `\\r\\n` or `\\r`. Comments (`:` keepalives) and the `id` and
    `retry` fields are skipped; the OpenAI stream only uses `data`, but an event typed
    `error` comes as an `ErrorEvent` (other types are read as plain data). Multi-line data
    is joined with `\\n`, as the SSE specification says.
    """

    __slots__ = ("_buf", "_data", "_error", "_max_line", "_pending_lf", "_started")

    def __init__(self, max_line: int = 16 * 1024 * 1024) -> None:
        self._buf = b""
        self._data: list[bytes] = []
        self._error = False  # the event being read is typed `error`
        self._max_line = max_line
        self._pending_lf = False  # the last read ended in `\r`: a `\n` next belongs to it
        self._started = False

    def feed(self, chunk: bytes) -> list[bytes | ErrorEvent]:
        """The payloads of the events that `chunk` completes, in order."""
        if not self._started:
            chunk, self._buf = self._buf + chunk, b""
            if len(chunk) < len(_BOM) and _BOM.startswith(chunk):
                self._buf = chunk  # maybe a byte order mark, split across reads
                return []
            self._started = True
            chunk = chunk.removeprefix(_BOM)
        if self._pending_lf:
            self._pending_lf = False
            if chunk[:1] == b"\n":
                chunk = chunk[1:]
        if b"\r" in chunk:
            self._pending_lf = chunk.endswith(b"\r")
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        buf = self._buf + chunk if self._buf else chunk
        lines = buf.split(b"\n")
        self._buf = lines.pop()
        if len(self._buf) > self._max_line:
            raise SSEError(f"SSE line longer than {self._max_line} bytes")
        events: list[bytes | ErrorEvent] = []
        data = self._data
        for line in lines:
            if not line:
                if data:
                    payload = data[0] if len(data) == 1 else b"\n".join(data)
                    events.append(ErrorEvent(payload) if self._error else payload)
                    data = self._data = []
                self._error = False
            elif line.startswith(b"data:"):
                value = line[5:]
                data.append(value[1:] if value[:1] == b" " else value)
            elif line == b"data":
                data.append(b"")
            elif line.startswith(b"event:"):
                self._error = line[6:].strip() == b"error"
            # Anything else is a comment or a field the OpenAI stream does not use.
        return events
