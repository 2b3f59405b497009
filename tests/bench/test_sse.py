"""Reading server-sent events: bench.sse."""

from __future__ import annotations

from bench.sse import DONE, DataEvents, has_text


def test_data_events_split_across_chunks() -> None:
    """Events split over chunks and CRLF line ends come out whole; other events are skipped."""
    events = DataEvents()
    assert events.feed(b'data: {"a"') == []
    assert events.feed(b": 1}\r\n\r\n: ping\n\ndata: [DONE]\n\ndata: aft") == [b'{"a": 1}', DONE]
    assert events.feed(b"er\n\n") == [b"after"]


def test_has_text_reads_chat_and_completion_events() -> None:
    """A chat delta's content or a completion's text is output text; a role delta is not."""
    assert has_text({"choices": [{"delta": {"content": "hi"}}]})
    assert has_text({"choices": [{"text": "hi"}]})
    assert not has_text({"choices": [{"delta": {"role": "assistant"}}]})
    assert not has_text({"choices": None})
