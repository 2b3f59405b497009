"""Tests for the incremental SSE decoder."""

from __future__ import annotations

import pytest

from backends.sse_reader import ErrorEvent, SSEDecoder, SSEError

STREAM = (
    b": keepalive comment\n\n"
    b'data: {"a": 1}\n\n'
    b"event: message\r\n"
    b'data: {"b": 2}\r\n\r\n'
    b"event: error\n"
    b'data: {"message": "overloaded", "code": 503}\n\n'
    b"event: error\n\n"
    b"id: 7\rdata: first line\rdata: second line\r\r"
    b"retry: 100\n"
    b"data\n\n"
    b"data:no-space\n\n"
    b'data: {"c": 3}\n\n'
    b"data: [DONE]\n\n"
)
EVENTS: list[bytes | ErrorEvent] = [
    b'{"a": 1}',
    b'{"b": 2}',
    ErrorEvent(b'{"message": "overloaded", "code": 503}'),
    b"first line\nsecond line",
    b"",
    b"no-space",
    b'{"c": 3}',
    b"[DONE]",
]


def feed_all(parts: list[bytes]) -> list[bytes | ErrorEvent]:
    decoder = SSEDecoder()
    events: list[bytes | ErrorEvent] = []
    for part in parts:
        events.extend(decoder.feed(part))
    return events


def test_whole_stream_in_one_read() -> None:
    """Several events in one read come out in order, with comments and other fields skipped;
    an event typed `error` comes as an ErrorEvent, and its type ends with it (an `event:
    error` without data types nothing after it)."""
    assert feed_all([STREAM]) == EVENTS


@pytest.mark.parametrize("cut", range(1, len(STREAM)))
def test_split_at_every_byte_boundary(cut: int) -> None:
    """Splitting the stream at any byte gives the same events, `\\r|\\n` splits included."""
    assert feed_all([STREAM[:cut], STREAM[cut:]]) == EVENTS


def test_one_byte_per_read() -> None:
    """A stream arriving one byte at a time decodes like the whole."""
    assert feed_all([STREAM[i : i + 1] for i in range(len(STREAM))]) == EVENTS


def test_event_is_emitted_as_soon_as_its_blank_line_arrives() -> None:
    """An event is complete at its blank line; later bytes are not waited for."""
    decoder = SSEDecoder()
    assert decoder.feed(b"data: x\n") == []
    assert decoder.feed(b"\n") == [b"x"]
    assert decoder.feed(b"data: y\r\n\r\n") == [b"y"]


def test_unterminated_event_is_not_emitted() -> None:
    """Data without its blank line (a stream cut short) never becomes an event."""
    assert feed_all([b"data: partial\n", b"data: more"]) == []


def test_byte_order_mark_is_ignored() -> None:
    """A UTF-8 BOM at the start of the stream is not part of the first field name."""
    assert feed_all([b"\xef\xbb", b"\xbfdata: x\n\n"]) == [b"x"]


def test_over_long_line_is_an_error() -> None:
    """A line longer than the limit raises instead of buffering without bound."""
    decoder = SSEDecoder(max_line=16)
    with pytest.raises(SSEError):
        decoder.feed(b"data: " + b"x" * 32)
