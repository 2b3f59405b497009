"""Reading the gateway's server-sent events: `data:` events split out of an answer's chunks,
`data: [DONE]` at the end, and whether an event carries output text."""

from __future__ import annotations

from typing import Any

DONE = b"[DONE]"


class DataEvents:
    """Splits a stream, chunk by chunk, into the payloads of its `data:` events."""

    __slots__ = ("_buffer",)

    def __init__(self) -> None:
        self._buffer = b""

    def feed(self, chunk: bytes) -> list[bytes]:
        """The payloads of the events this chunk completes, in order (CRLF read as LF)."""
        if b"\r" in chunk:
            chunk = chunk.replace(b"\r\n", b"\n")
        buffer = self._buffer + chunk
        payloads: list[bytes] = []
        while (end := buffer.find(b"\n\n")) >= 0:
            event, buffer = buffer[:end], buffer[end + 2 :]
            if event.startswith(b"data:"):
                payloads.append(event[5:].strip())
        self._buffer = buffer
        return payloads


def has_text(document: dict[str, Any]) -> bool:
    """A decoded event carries output text (a chat delta's content or a completion's text)."""
    for choice in document.get("choices") or ():
        if choice.get("text") or (choice.get("delta") or {}).get("content"):
            return True
    return False
