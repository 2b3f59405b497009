"""`x-request-id` and `Server-Timing` stamped on the Starlette app's answers."""

from __future__ import annotations

from typing import Any

from starlette.types import Message, Receive, Scope, Send

from budgets.timeline import Timeline
from core.stages import StageName
from gateway.answer_stamp import AnswerStamp, server_timing
from gateway.observing import RECORD_SCOPE_KEY
from obs.request_record import RequestRecord


def _answering(headers: list[tuple[bytes, bytes]]) -> Any:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": b"{}"})

    return app


async def _nothing() -> Message:
    return {"type": "http.request", "body": b""}


async def _sent(app: Any, scope: Scope) -> list[Message]:
    messages: list[Message] = []

    async def send(message: Message) -> None:
        messages.append(message)

    await AnswerStamp(app, clock=lambda: 10.5)(scope, _nothing, send)
    return messages


async def test_missing_headers_are_added_from_the_record() -> None:
    """An answer without them gets the record's id and the total since arrival."""
    record = RequestRecord("GET", "/v1/models", 10.0, 0, request_id="abc")
    start, body = await _sent(_answering([]), {"type": "http", RECORD_SCOPE_KEY: record})
    assert start["headers"] == [(b"x-request-id", b"abc"), (b"server-timing", b"total;dur=500.00")]
    assert body["type"] == "http.response.body"


async def test_headers_the_endpoint_set_are_kept() -> None:
    """An endpoint's own `x-request-id` and `Server-Timing` are neither replaced nor doubled."""
    record = RequestRecord("GET", "/v1/models", 10.0, 0, request_id="abc")
    own = [(b"x-request-id", b"own"), (b"server-timing", b"parse;dur=1.00")]
    start, _ = await _sent(_answering(own), {"type": "http", RECORD_SCOPE_KEY: record})
    assert start["headers"] == own


async def test_without_a_record_nothing_is_added() -> None:
    """A request the observing middleware did not record passes untouched."""
    start, _ = await _sent(_answering([]), {"type": "http"})
    assert start["headers"] == []


def test_server_timing_names_the_stages_when_there_are_some() -> None:
    """With a timeline, the stages and the total; without, the total alone."""
    clock = iter([1.25, 1.5]).__next__
    timeline = Timeline(clock, started=1.0)
    timeline.record(StageName.PARSE, 1.0)
    record = RequestRecord("POST", "/v1/chat/completions", 1.0, 0, request_id="x")
    record.timeline = timeline
    assert server_timing(record, 2.0) == "parse;dur=250.00, total;dur=500.00"
