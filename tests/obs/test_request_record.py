"""The request record's writing interface: each stage notes its part in one call."""

from __future__ import annotations

import asyncio

from budgets.timeline import Timeline
from core.answers import Choice, ChoiceDelta, Completion, StreamChunk, Usage
from obs.request_record import RequestRecord


def _record() -> RequestRecord:
    return RequestRecord("POST", "/v1/chat/completions", 10.0, 0)


def test_begin_keeps_the_client_trace_only_when_not_traced_here() -> None:
    """Arrival notes id, caller, class and deadline; the client's trace id only without a
    span."""
    record = _record()
    record.begin("abc", "t" * 32)
    record.note_caller("acme", "0123456789ab")
    record.note_budget(Timeline(lambda: 10.0), "batch", 40.0)
    assert (record.request_id, record.priority, record.deadline_at) == ("abc", "batch", 40.0)
    assert (record.tenant, record.key_id) == ("acme", "0123456789ab")
    assert record.client_trace_id == "t" * 32


def test_streamed_chunks_add_up_like_a_whole_answer() -> None:
    """Chunks note finish reasons and the final usage as a whole answer would."""
    streamed, whole = _record(), _record()
    streamed.note_prompt("[]")
    streamed.note_chunk(StreamChunk([ChoiceDelta(0, "Hel")]))
    streamed.note_chunk(StreamChunk([ChoiceDelta(0, "lo", "stop")], Usage(4, 2)))
    whole.note_prompt("[]")
    whole.note_answer(Completion([Choice(0, "Hello", "stop")], Usage(4, 2)))
    for record in (streamed, whole):
        assert (record.input_tokens, record.output_tokens) == (4, 2)
        assert record.finish_reasons == ["stop"]
        assert "".join(record.content_out or []) == "Hello"


def test_a_stream_counts_its_usage_once_or_else_what_its_chunks_brought() -> None:
    """The tokens a response accounts for: its usage when it arrived (never added to what
    the chunks brought), else the prompt and tokens its chunks reported; None with neither."""
    whole, broken, empty = _record(), _record(), _record()
    for record in (whole, broken):
        record.note_chunk(StreamChunk([ChoiceDelta(0, "Hel", token_count=2)], None, 4))
        record.note_chunk(StreamChunk([ChoiceDelta(0, "lo", token_count=1)]))
    whole.note_chunk(StreamChunk([ChoiceDelta(0, "", "stop")], Usage(4, 3)))
    assert whole.counted_tokens() == (4, 3)
    assert broken.counted_tokens() == (4, 3) and broken.input_tokens is None
    assert empty.counted_tokens() is None


def test_a_stream_keeps_its_first_failure_and_an_http_error_its_status() -> None:
    """After the first byte the first error stays and the status stays 200; an HTTP error
    sets both, with the overrun or the shed reason."""
    record = _record()
    record.note_failure("deadline_exceeded", overrun="stall")
    record.note_failure("backend_error")
    assert (record.status, record.error, record.overruns) == (200, "deadline_exceeded", ["stall"])
    shed = _record()
    shed.note_failure("overloaded", status=429, shed="overloaded")
    assert (shed.status, shed.error, shed.shed) == (429, "overloaded", "overloaded")


def test_lookups_and_the_cache_status() -> None:
    """Each cache stage is one lookup entry; an overrun names its stage."""
    record = _record()
    record.note_lookup("exact", "error", "exact_cache")
    record.note_cache("error", None, None)
    assert record.cache_lookups == [("exact", "error")] and record.overruns == ["exact_cache"]
    assert record.cache == "error" and record.similarity is None


async def test_a_shadow_lookup_is_noted_once_it_is_done() -> None:
    """A shadow lookup joins the lookups as `semantic_shadow` once done; one still running
    when the wait ends is left out."""
    loop = asyncio.get_running_loop()
    record, slow = _record(), _record()
    done: asyncio.Future[None] = loop.create_future()
    record.note_shadow(done, lambda: "hit")
    loop.call_later(0.01, done.set_result, None)
    await record.wait_shadow(5.0)
    assert record.shadow == "hit" and record.cache_lookups == [("semantic_shadow", "hit")]
    slow.note_shadow(loop.create_future(), lambda: "hit")
    await slow.wait_shadow(0.01)
    assert slow.shadow is None and slow.cache_lookups == []


def test_an_answer_is_cut_short_by_a_late_failure_or_a_client_leaving() -> None:
    """`cut_short` names a stream's failure after its first byte and a client's leaving (with
    or without its 499), not a failure the HTTP status already tells."""
    stream, left_stream, left, refused = _record(), _record(), _record(), _record()
    stream.note_failure("backend_error")
    left_stream.note_failure("client_closed_request")
    left.note_failure("client_closed_request", status=499)
    refused.note_failure("backend_error", status=502)
    assert stream.cut_short() == "backend_error"
    assert left_stream.cut_short() == left.cut_short() == "client_closed_request"
    assert refused.cut_short() is None
    assert _record().cut_short() is None
