"""A stream's SSE events, a read at a time, as chunks: merged per read, ended by `[DONE]` or
an error, and each choice's finish heard once."""

from __future__ import annotations

import orjson
import pytest

from backends.openai_events import StreamEvents
from backends.sse_reader import ErrorEvent
from core.answers import StreamChunk
from core.backend_errors import BackendError


def _delta(index: int, content: str | None = None, finish: str | None = None) -> bytes:
    delta = {} if content is None else {"content": content}
    return orjson.dumps({"choices": [{"index": index, "delta": delta, "finish_reason": finish}]})


USAGE = orjson.dumps({"choices": [], "usage": {"prompt_tokens": 2, "completion_tokens": 3}})


def _said(chunk: StreamChunk | None) -> list[tuple[int, str, str | None]]:
    assert chunk is not None
    return [(d.index, d.text, d.finish_reason) for d in chunk.deltas]


def test_one_reads_events_are_one_chunk_until_done() -> None:
    """The events of a read are one chunk, in order; `[DONE]` ends the stream and what
    follows it is not read."""
    chunk, failure, done = StreamEvents("chat").read(
        [_delta(0, "a"), _delta(0, "b"), b"[DONE]", _delta(0, "c")]
    )
    assert _said(chunk) == [(0, "a", None), (0, "b", None)]
    assert failure is None and done


def test_a_repeated_finish_is_passed_on_once() -> None:
    """An upstream that sends its finish chunk twice (in one read or the next) is heard
    once; the usage after it still comes."""
    events = StreamEvents("chat")
    chunk, _, _ = events.read([_delta(0, "a"), _delta(0, finish="stop"), _delta(0, finish="stop")])
    assert _said(chunk) == [(0, "a", None), (0, "", "stop")]
    assert events.read([_delta(0, finish="stop")]) == (None, None, False)
    chunk, _, done = events.read([_delta(0, finish="stop"), USAGE, b"[DONE]"])
    assert chunk is not None and chunk.deltas == [] and chunk.usage is not None and done


def test_other_choices_go_on_after_one_finished() -> None:
    """With n > 1, one choice's finish leaves the others' deltas untouched."""
    events = StreamEvents("chat")
    events.read([_delta(0, finish="length")])
    chunk, _, _ = events.read([_delta(1, "x"), _delta(0, "late"), _delta(1, finish="stop")])
    assert _said(chunk) == [(1, "x", None), (1, "", "stop")]


@pytest.mark.parametrize(
    "error",
    [
        b'{"error": {"message": "engine died", "code": 500}}',
        ErrorEvent(b'{"message": "engine died", "code": 500}'),
    ],
)
def test_an_error_event_ends_the_stream_after_what_came_before(
    error: bytes | ErrorEvent,
) -> None:
    """An error event, in the data or typed `event: error`, is the stream's end; the deltas
    before it in the same read still go."""
    chunk, failure, done = StreamEvents("chat").read([_delta(0, "a"), error, _delta(0, "b")])
    assert _said(chunk) == [(0, "a", None)]
    assert isinstance(failure, BackendError) and "engine died" in failure.message
    assert not done


def test_the_upstreams_fingerprint_travels_with_its_chunks() -> None:
    """A streamed event's `system_fingerprint` stays on the chunk it is read into, merged
    or with a finished choice's repeat left out; an event without one leaves it None."""
    events = StreamEvents("chat")

    def stamped(event: bytes) -> bytes:
        return orjson.dumps({**orjson.loads(event), "system_fingerprint": "fp_up"})

    chunk, _, _ = events.read([stamped(_delta(0, "a")), stamped(_delta(0, "b"))])
    assert chunk is not None and chunk.system_fingerprint == "fp_up"
    chunk, _, _ = events.read([stamped(_delta(0, finish="stop")), stamped(_delta(0, "late"))])
    assert chunk is not None and chunk.system_fingerprint == "fp_up"
    chunk, _, _ = StreamEvents("chat").read([_delta(0, "a")])
    assert chunk is not None and chunk.system_fingerprint is None


@pytest.mark.parametrize(
    ("first", "second"),
    [(b"Hi \\ud83d", b"\\ude00!"), (b"Hi \xf0\x9f", b"\x98\x80!")],
    ids=["utf16-halves", "utf8-bytes"],
)
def test_a_character_cut_between_events_is_put_back_together(first: bytes, second: bytes) -> None:
    """An emoji an upstream cut in two (escaped UTF-16 halves, or raw UTF-8 bytes) arrives
    whole, across reads, for each choice apart; a part never finished ends as U+FFFD."""

    def event(index: int, text: bytes, finish: bytes = b"null") -> bytes:
        return b'{"choices": [{"index": %d, "delta": {"content": "%s"}, "finish_reason": %s}]}' % (
            index,
            text,
            finish,
        )

    events = StreamEvents("chat", choices=2)
    chunk, failure, _ = events.read([event(0, first), event(1, first)])
    assert failure is None and _said(chunk) == [(0, "Hi ", None), (1, "Hi ", None)]
    chunk, _, _ = events.read([event(1, b"x", b'"stop"'), event(0, second)])
    assert _said(chunk) == [(1, "\ufffdx", "stop"), (0, "\U0001f600!", None)]
    chunk, _, _ = events.read([event(0, first, b'"stop"')])
    assert _said(chunk) == [(0, "Hi \ufffd", "stop")]


def test_reasoning_cut_between_events_is_put_back_together() -> None:
    """Thinking text is joined on its own, apart from the answer's text."""
    events = StreamEvents("chat")
    cut = b'{"choices": [{"index": 0, "delta": {"reasoning_content": "a\\ud83d"}}]}'
    rest = b'{"choices": [{"index": 0, "delta": {"reasoning_content": "\\ude00", "content": "b"}}]}'
    chunk, _, _ = events.read([cut, rest])
    assert chunk is not None
    assert [(d.reasoning, d.text) for d in chunk.deltas] == [("a", ""), ("\U0001f600", "b")]


def test_a_streams_tool_calls_are_made_canonical_across_reads() -> None:
    """Fragments without an index, each repeating the call's head, arrive in two reads: the
    stream passes the head once, then the arguments, all under index 0."""
    head = {"id": "call_a", "type": "function", "function": {"name": "f", "arguments": '{"a"'}}
    more = {"id": "call_a", "type": "function", "function": {"name": "f", "arguments": ": 1}"}}
    events = StreamEvents("chat")
    reads = [
        events.read([orjson.dumps({"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]})])
        for call in (head, more)
    ]
    calls = [delta.tool_calls for chunk, _, _ in reads for delta in (chunk.deltas if chunk else [])]
    assert calls == [
        [{"index": 0, "id": "call_a", "type": "function", "function": head["function"]}],
        [{"index": 0, "function": {"arguments": ": 1}"}}],
    ]
