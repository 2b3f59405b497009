"""The Responses API's stream events: items open and close as reasoning, text and calls
follow one another; sequence numbers rise; the end says completed, incomplete or failed."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from openai.types.responses import ResponseFailedEvent, ResponseStreamEvent
from pydantic import TypeAdapter

from core.answers import Choice, ChoiceDelta, StreamChunk, Usage
from core.backend_errors import BackendError
from core.errors import DeadlineExceeded, GatewayError, InvalidRequest, RateLimited
from core.responses_protocol import ResponsesRequest
from gateway.responses.events import ResponseEvents
from gateway.responses.objects import ResponseShell

SHELL = ResponseShell("resp_abc", 1700000000, ResponsesRequest(model="m", input="hi"), "m")


def _events(raw: bytes) -> list[dict[str, Any]]:
    """Parse `event:`/`data:` pairs and check the event name matches the payload's type."""
    events = []
    for block in raw.decode().split("\n\n"):
        if not block:
            continue
        name, data = block.split("\n")
        event = orjson.loads(data.removeprefix("data: "))
        assert name == "event: " + event["type"]
        events.append(event)
    return events


class Keeper:
    """A stand-in for the store: hears each final response; `stored` says how it went."""

    def __init__(self, stored: bool = True) -> None:
        self.stored = stored
        self.kept: list[dict[str, Any]] = []

    async def __call__(self, response: dict[str, Any]) -> bool:
        self.kept.append(response)
        return self.stored


def _call(index: int, name: str, arguments: str) -> dict[str, Any]:
    return {
        "index": index,
        "id": f"call_{index}",
        "type": "function",
        "function": {"name": name, "arguments": arguments},
    }


async def test_reasoning_then_text_then_a_call() -> None:
    """Three items in order, each added, filled and done; the final response holds them."""
    keeper = Keeper()
    events = ResponseEvents(SHELL, keeper)
    raw = events.render(StreamChunk([ChoiceDelta(0, reasoning="Think")]))
    raw += events.render(StreamChunk([ChoiceDelta(0, reasoning=" more")]))
    raw += events.render(StreamChunk([ChoiceDelta(0, "Sure.")]))
    raw += events.render(StreamChunk([ChoiceDelta(0, tool_calls=[_call(0, "f", '{"a":1}')])]))
    raw += events.render(StreamChunk([ChoiceDelta(0, finish_reason="tool_calls")], Usage(3, 5)))
    raw += await events.close()
    parsed = _events(raw)
    kinds = [event["type"] for event in parsed]
    assert kinds == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.reasoning_text.delta",
        "response.reasoning_text.delta",
        "response.reasoning_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.output_item.added",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert [event["sequence_number"] for event in parsed] == list(range(len(parsed)))
    final = parsed[-1]["response"]
    assert [item["type"] for item in final["output"]] == ["reasoning", "message", "function_call"]
    assert final["output"][0]["content"][0]["text"] == "Think more"
    assert final["output"][1]["content"][0]["text"] == "Sure."
    assert final["output"][2]["arguments"] == '{"a":1}'
    assert final["output"][2]["call_id"] == "call_0"
    assert final["usage"]["output_tokens"] == 5
    assert keeper.kept == [final]
    added = [e for e in parsed if e["type"] == "response.output_item.added"]
    assert [e["output_index"] for e in added] == [0, 1, 2]


async def test_fragmented_calls_from_a_pass_through_backend() -> None:
    """An id-and-name delta opens a call, fragments without an id continue it; a second id
    opens the next call."""
    events = ResponseEvents(SHELL)
    head = {
        "index": 0,
        "id": "call_a",
        "type": "function",
        "function": {"name": "f", "arguments": ""},
    }
    more = {"index": 0, "function": {"arguments": '{"x"'}}
    rest = {"index": 0, "function": {"arguments": ":2}"}}
    second = {"index": 1, "id": "call_b", "function": {"name": "g", "arguments": "{}"}}
    raw = events.render(StreamChunk([ChoiceDelta(0, tool_calls=[head])]))
    raw += events.render(StreamChunk([ChoiceDelta(0, tool_calls=[more, rest, second])]))
    raw += events.render(StreamChunk([ChoiceDelta(0, finish_reason="tool_calls")], Usage(1, 1)))
    raw += await events.close()
    final = _events(raw)[-1]["response"]
    assert [(i["name"], i["arguments"]) for i in final["output"]] == [
        ("f", '{"x":2}'),
        ("g", "{}"),
    ]


async def test_a_length_stop_is_incomplete() -> None:
    """Cut by max_output_tokens: response.incomplete with its reason."""
    events = ResponseEvents(SHELL)
    raw = events.render(StreamChunk([ChoiceDelta(0, "partial", "length")], Usage(1, 1)))
    last = _events(raw + await events.close())[-1]
    assert last["type"] == "response.incomplete"
    assert last["response"]["incomplete_details"] == {"reason": "max_output_tokens"}


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (BackendError("engine died"), "server_error"),
        (DeadlineExceeded("total"), "server_error"),
        (RateLimited("slow down", headers={}), "rate_limit_exceeded"),
        (InvalidRequest("bad prompt"), "invalid_prompt"),
    ],
)
async def test_a_failure_is_an_error_then_failed_and_kept(error: GatewayError, code: str) -> None:
    """After the first byte a failure is an error event (the gateway's code) and
    response.failed, which parses strictly with the SDK's types (its code from the SDK's enum)
    and is handed on to be stored, as OpenAI keeps failed responses."""
    keeper = Keeper()
    events = ResponseEvents(SHELL, keeper)
    raw = events.render(StreamChunk([ChoiceDelta(0, "partial")]))
    raw += await events.fail(error)
    parsed = _events(raw)
    assert [e["type"] for e in parsed[-2:]] == ["error", "response.failed"]
    assert parsed[-2]["message"] == error.public_message and parsed[-2]["code"] == error.code
    failed = ResponseFailedEvent.model_validate(parsed[-1], strict=True)
    assert failed.response.status == "failed" and failed.response.error is not None
    assert failed.response.error.code == code
    assert keeper.kept == [parsed[-1]["response"]]


@pytest.mark.parametrize("finish", ["stop", "length", None])
async def test_the_last_event_says_whether_the_response_was_stored(
    finish: str | None,
) -> None:
    """The final response (completed, incomplete or failed) is stored before its event is
    rendered, and says `store: false` when the store did not take it, `true` when it did."""
    for stored in (True, False):
        keeper = Keeper(stored)
        events = ResponseEvents(SHELL, keeper)
        raw = events.render(StreamChunk([ChoiceDelta(0, "partial", finish)], Usage(1, 1)))
        if finish is None:
            raw += await events.fail(BackendError("engine died"))
        else:
            raw += await events.close()
        last = _events(raw)[-1]
        assert last["type"] in ("response.completed", "response.incomplete", "response.failed")
        assert last["response"]["store"] is stored
        assert [kept["id"] for kept in keeper.kept] == ["resp_abc"]


def _through_the_sdk(raw: bytes) -> Any:
    """Feed the events to the official SDK's stream accumulator; its final response."""
    from openai import omit
    from openai.lib.streaming.responses._responses import ResponseStreamState
    from openai.types.responses import ResponseStreamEvent
    from pydantic import TypeAdapter

    state: Any = ResponseStreamState(input_tools=omit, text_format=omit)
    adapter: TypeAdapter[Any] = TypeAdapter(ResponseStreamEvent)
    for event in _events(raw):
        state.handle_event(adapter.validate_python(event))
    return state._completed_response


async def test_text_and_calls_taking_turns_get_an_id_each() -> None:
    """Text, a call, text, a call (and reasoning twice): four items with distinct ids, which
    the official SDK's accumulator takes without a conflict."""
    events = ResponseEvents(SHELL)
    raw = events.render(StreamChunk([ChoiceDelta(0, reasoning="a")]))
    raw += events.render(StreamChunk([ChoiceDelta(0, "Checking.")]))
    raw += events.render(StreamChunk([ChoiceDelta(0, tool_calls=[_call(0, "f", "{}")])]))
    raw += events.render(StreamChunk([ChoiceDelta(0, reasoning="b")]))
    raw += events.render(StreamChunk([ChoiceDelta(0, "And.")]))
    raw += events.render(StreamChunk([ChoiceDelta(0, tool_calls=[_call(1, "g", "{}")])]))
    raw += events.render(StreamChunk([ChoiceDelta(0, finish_reason="tool_calls")], Usage(1, 1)))
    raw += await events.close()
    output = _events(raw)[-1]["response"]["output"]
    assert [i["type"] for i in output] == ["reasoning", "message", "function_call"] * 2
    assert len({item["id"] for item in output}) == 6
    final = _through_the_sdk(raw)
    assert [item.id for item in final.output] == [item["id"] for item in output]


async def test_interleaved_call_fragments_go_to_their_own_call() -> None:
    """Two calls' heads, then their fragments by `index`, interleaved: each call gets its own
    arguments, in the events and in the SDK's accumulated response, and the second streams
    once the first is done."""
    events = ResponseEvents(SHELL)
    heads = [_call(0, "weather", ""), _call(1, "time", "")]
    fragments = [
        {"index": 0, "function": {"arguments": '{"city":'}},
        {"index": 1, "function": {"arguments": '{"tz":'}},
        {"index": 0, "function": {"arguments": '"Paris"}'}},
        {"index": 1, "function": {"arguments": '"CET"}'}},
    ]
    raw = events.render(StreamChunk([ChoiceDelta(0, tool_calls=heads)]))
    for fragment in fragments:
        raw += events.render(StreamChunk([ChoiceDelta(0, tool_calls=[fragment])]))
    raw += events.render(StreamChunk([ChoiceDelta(0, finish_reason="tool_calls")], Usage(1, 1)))
    raw += await events.close()
    done = [e for e in _events(raw) if e["type"] == "response.function_call_arguments.done"]
    assert [(e["name"], e["arguments"]) for e in done] == [
        ("weather", '{"city":"Paris"}'),
        ("time", '{"tz":"CET"}'),
    ]
    final = _through_the_sdk(raw)
    assert [item.arguments for item in final.output] == ['{"city":"Paris"}', '{"tz":"CET"}']
    _one_item_at_a_time(_events(raw))


def _one_item_at_a_time(parsed: list[dict[str, Any]]) -> None:
    """Each item is added, filled and done before the next is added (as OpenAI streams)."""
    open_at: int | None = None
    for event in parsed:
        if event["type"] == "response.output_item.added":
            assert open_at is None, f"item {event['output_index']} added while {open_at} is open"
            open_at = event["output_index"]
        elif event["type"] == "response.output_item.done":
            assert event["output_index"] == open_at
            open_at = None
        elif "output_index" in event:
            assert event["output_index"] == open_at
    assert open_at is None


async def test_parallel_calls_stream_one_after_the_other() -> None:
    """Two whole calls in one delta (as the gateway's parsers give them): the first is added,
    filled and done before the second is added; the items are the whole answer's."""
    calls = [_call(0, "weather", '{"city":"Paris"}'), _call(1, "time", '{"tz":"CET"}')]
    events = ResponseEvents(SHELL)
    raw = events.render(StreamChunk([ChoiceDelta(0, tool_calls=calls)]))
    raw += events.render(StreamChunk([ChoiceDelta(0, finish_reason="tool_calls")], Usage(1, 1)))
    parsed = _events(raw + await events.close())
    _one_item_at_a_time(parsed)
    assert _accumulated(parsed) == parsed[-1]["response"]["output"]
    whole = SHELL.output(Choice(0, "", "tool_calls", None, calls))
    assert parsed[-1]["response"]["output"] == whole


async def test_a_message_cut_short_is_incomplete() -> None:
    """Cut by max_output_tokens, the message item itself is incomplete, streamed or not."""
    events = ResponseEvents(SHELL)
    raw = events.render(StreamChunk([ChoiceDelta(0, "partial", "length")], Usage(1, 1)))
    output = _events(raw + await events.close())[-1]["response"]["output"]
    assert output[0]["status"] == "incomplete" and output[0]["content"][0]["text"] == "partial"
    whole = SHELL.output(Choice(0, "partial", "length"))
    assert whole[0]["status"] == "incomplete"


def _accumulated(parsed: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The output items a client builds from the events alone, as the protocol defines them:
    each event parses with the SDK's types, lands on the item and part its indexes name, and
    each `done` holds what the deltas added up to."""
    adapter: TypeAdapter[Any] = TypeAdapter(ResponseStreamEvent)
    items: list[dict[str, Any]] = []
    for event in parsed:
        adapter.validate_python(event, strict=True)
        kind = event["type"]
        if kind == "response.output_item.added":
            assert event["output_index"] == len(items)
            items.append(orjson.loads(orjson.dumps(event["item"])))
            continue
        if "output_index" not in event:
            continue
        item = items[event["output_index"]]
        assert event.get("item_id", item["id"]) == item["id"]
        if kind == "response.content_part.added":
            assert event["content_index"] == len(item["content"])
            item["content"].append(dict(event["part"]))
        elif kind in ("response.output_text.delta", "response.reasoning_text.delta"):
            item["content"][event["content_index"]]["text"] += event["delta"]
        elif kind in ("response.output_text.done", "response.reasoning_text.done"):
            assert item["content"][event["content_index"]]["text"] == event["text"]
        elif kind == "response.content_part.done":
            assert item["content"][event["content_index"]] == event["part"]
        elif kind == "response.function_call_arguments.delta":
            item["arguments"] += event["delta"]
        elif kind == "response.output_item.done":
            assert event["item"].get("content") == item.get("content")
            items[event["output_index"]] = event["item"]
    return items


async def test_reasoning_streams_through_a_content_part() -> None:
    """A reasoning item streams as a message does: its `reasoning_text` part is added, filled
    by deltas and done, all at content_index 0; adding up the events gives the items of the
    whole (non-streamed) response, which the final event holds too."""
    events = ResponseEvents(SHELL)
    raw = events.render(StreamChunk([ChoiceDelta(0, reasoning="Think")]))
    raw += events.render(StreamChunk([ChoiceDelta(0, reasoning=" twice")]))
    raw += events.render(StreamChunk([ChoiceDelta(0, "Done.", "stop")], Usage(1, 2)))
    parsed = _events(raw + await events.close())
    reasoning = [e for e in parsed if e.get("item_id") == SHELL.reasoning_id()]
    assert [e["type"] for e in reasoning] == [
        "response.content_part.added",
        "response.reasoning_text.delta",
        "response.reasoning_text.delta",
        "response.reasoning_text.done",
        "response.content_part.done",
    ]
    assert {(e["output_index"], e["content_index"]) for e in reasoning} == {(0, 0)}
    assert reasoning[0]["part"] == {"type": "reasoning_text", "text": ""}
    assert reasoning[-1]["part"] == {"type": "reasoning_text", "text": "Think twice"}
    whole = SHELL.output(Choice(0, "Done.", "stop", reasoning="Think twice"))
    assert _accumulated(parsed) == whole == parsed[-1]["response"]["output"]
    assert [e["sequence_number"] for e in parsed] == list(range(len(parsed)))


@pytest.mark.parametrize(
    "chunks",
    [
        [ChoiceDelta(0, "Half a sent")],
        [ChoiceDelta(0, reasoning="Hmm"), ChoiceDelta(0, reasoning=", so")],
        [ChoiceDelta(0, reasoning="Hmm"), ChoiceDelta(0, "Let me look.")],
        [
            ChoiceDelta(0, "Looking."),
            ChoiceDelta(0, tool_calls=[_call(0, "f", "")]),
            ChoiceDelta(0, tool_calls=[{"index": 0, "function": {"arguments": '{"a":'}}]),
        ],
    ],
    ids=["open-text", "open-reasoning", "reasoning-then-text", "open-call"],
)
async def test_a_failure_carries_the_items_streamed_so_far(chunks: list[ChoiceDelta]) -> None:
    """response.failed lists every item the stream announced, at its output_index, with its
    id and what its deltas added up to: those done as done, the one cut short `incomplete`;
    the stored response is the same."""
    keeper = Keeper()
    events = ResponseEvents(SHELL, keeper)
    raw = b"".join(events.render(StreamChunk([delta])) for delta in chunks)
    parsed = _events(raw + await events.fail(BackendError("engine died")))
    streamed = _accumulated(parsed[:-2])
    output = parsed[-1]["response"]["output"]
    assert [(i["id"], i["type"]) for i in output] == [(i["id"], i["type"]) for i in streamed]
    for item, seen in zip(output, streamed, strict=True):
        assert item.get("content") == seen.get("content")
        assert item.get("arguments") == seen.get("arguments")
        assert item["status"] == ("completed" if seen["status"] == "completed" else "incomplete")
    assert output[-1]["status"] == "incomplete"
    ResponseFailedEvent.model_validate(parsed[-1], strict=True)
    assert keeper.kept == [parsed[-1]["response"]]


async def test_a_failure_names_the_responses_field() -> None:
    """A failure after the first byte that names a chat parameter names, in its error event,
    the Responses field the client sent."""
    events = ResponseEvents(SHELL)
    raw = events.render(StreamChunk([ChoiceDelta(0, "partial")]))
    raw += await events.fail(InvalidRequest("max_tokens is too large.", param="max_tokens"))
    error = _events(raw)[-2]
    assert error["param"] == "max_output_tokens"
    assert error["message"] == "max_output_tokens is too large."


@pytest.mark.parametrize(
    "chunks",
    [
        [ChoiceDelta(0, finish_reason="length")],
        [ChoiceDelta(0, reasoning="Hmm"), ChoiceDelta(0, finish_reason="length")],
        [ChoiceDelta(0, finish_reason="stop")],
        [ChoiceDelta(0, reasoning="Hmm"), ChoiceDelta(0, finish_reason="stop")],
        [ChoiceDelta(0, "Hi"), ChoiceDelta(0, finish_reason="length")],
    ],
)
async def test_streamed_and_whole_outputs_agree_when_nothing_is_said(
    chunks: list[ChoiceDelta],
) -> None:
    """A response cut before any text holds no message (as OpenAI's: an empty one would
    read as an answer), streamed or not; one that ends with nothing said holds an empty
    message, streamed or not. The stored response is the streamed one."""
    keeper = Keeper()
    events = ResponseEvents(SHELL, keeper)
    raw = b"".join(events.render(StreamChunk([delta])) for delta in chunks)
    parsed = _events(raw + await events.close())
    streamed = parsed[-1]["response"]["output"]
    text = "".join(delta.text for delta in chunks)
    reasoning = "".join(delta.reasoning for delta in chunks) or None
    whole = SHELL.output(Choice(0, text, chunks[-1].finish_reason or "stop", reasoning=reasoning))
    assert streamed == whole == _accumulated(parsed)
    assert keeper.kept == [parsed[-1]["response"]]
    cut = chunks[-1].finish_reason == "length"
    assert any(item["type"] == "message" for item in whole) == (not cut or bool(text))


@pytest.mark.parametrize("whole_calls", [True, False])
async def test_max_tool_calls_caps_the_calls_a_response_holds(whole_calls: bool) -> None:
    """With max_tool_calls 2 a response holds the first two calls, streamed (whole calls
    from the gateway's parsers, or a pass-through backend's fragments) or not; the response
    echoes the cap."""
    request = ResponsesRequest(model="m", input="hi", max_tool_calls=2)
    shell = ResponseShell("resp_cap", 1700000000, request, "m")
    calls = [_call(i, "f", f'{{"n":{i}}}') for i in range(3)]
    events = ResponseEvents(shell)
    if whole_calls:
        raw = events.render(StreamChunk([ChoiceDelta(0, tool_calls=calls)]))
    else:
        raw = b""
        for call in calls:
            head = {**call, "function": {"name": "f", "arguments": ""}}
            tail = {"function": {"arguments": call["function"]["arguments"]}}
            raw += events.render(StreamChunk([ChoiceDelta(0, tool_calls=[head])]))
            raw += events.render(StreamChunk([ChoiceDelta(0, tool_calls=[tail])]))
    raw += events.render(StreamChunk([ChoiceDelta(0, finish_reason="tool_calls")], Usage(1, 1)))
    parsed = _events(raw + await events.close())
    streamed = parsed[-1]["response"]["output"]
    assert streamed == _accumulated(parsed)
    assert streamed == shell.output(Choice(0, "", "tool_calls", None, calls))
    assert [item["arguments"] for item in streamed] == ['{"n":0}', '{"n":1}']
    assert parsed[-1]["response"]["max_tool_calls"] == 2


def _entry(token: str, logprob: float = -0.5) -> dict[str, Any]:
    """One token's chat logprob entry, with an alternative."""
    raw = list(token.encode())
    alternative = {"token": token.upper(), "logprob": -2.0, "bytes": list(token.upper().encode())}
    return {"token": token, "logprob": logprob, "bytes": raw, "top_logprobs": [alternative]}


async def test_text_deltas_carry_their_tokens_logprobs() -> None:
    """Each `output_text.delta` holds its text's logprobs; the done event, the part and the
    final response hold them all, in the shapes the official client reads; a thinking delta's
    logprobs (a pass-through backend's) are no message's."""
    events = ResponseEvents(SHELL)
    raw = events.render(
        StreamChunk([ChoiceDelta(0, reasoning="Hm", logprobs={"content": [_entry("Hm")]})])
    )
    raw += events.render(StreamChunk([ChoiceDelta(0, "Hi", logprobs={"content": [_entry("Hi")]})]))
    raw += events.render(
        StreamChunk([ChoiceDelta(0, " there", logprobs={"content": [_entry(" there")]})])
    )
    raw += events.render(StreamChunk([ChoiceDelta(0, finish_reason="stop")], Usage(1, 3)))
    raw += await events.close()
    adapter: TypeAdapter[ResponseStreamEvent] = TypeAdapter(ResponseStreamEvent)
    parsed = [adapter.validate_python(e) for e in _events(raw)]
    deltas = [e for e in parsed if e.type == "response.output_text.delta"]
    assert [[lp.token for lp in e.logprobs] for e in deltas] == [["Hi"], [" there"]]
    assert deltas[0].logprobs[0].top_logprobs is not None
    assert deltas[0].logprobs[0].top_logprobs[0].token == "HI"
    (done,) = [e for e in parsed if e.type == "response.output_text.done"]
    assert [lp.token for lp in done.logprobs] == ["Hi", " there"]
    final = parsed[-1]
    assert final.type == "response.completed"
    message = final.response.output[-1]
    assert message.type == "message" and message.content[0].type == "output_text"
    logprobs = message.content[0].logprobs
    assert logprobs is not None and [lp.token for lp in logprobs] == ["Hi", " there"]
    assert bytes(b for lp in logprobs for b in lp.bytes).decode() == "Hi there"


def _byte_entry(raw: bytes) -> dict[str, Any]:
    """The logprob entry of a token that holds only part of a character."""
    return {"token": "", "logprob": -0.1, "bytes": list(raw), "top_logprobs": []}


async def test_a_tokens_first_bytes_keep_their_logprobs_for_the_text_that_ends_them() -> None:
    """A token with only a character's first bytes brings no text: its logprobs go with the
    next text delta, so the stream lists every token the whole answer does (whose bytes add up
    to the text); one the answer never ended is still in the done event."""
    events = ResponseEvents(SHELL)
    first, rest = "你".encode()[:2], "你".encode()[2:]
    raw = events.render(
        StreamChunk([ChoiceDelta(0, "", logprobs={"content": [_byte_entry(first)]})])
    )
    rest_entry = {**_byte_entry(rest), "token": "你"}
    raw += events.render(StreamChunk([ChoiceDelta(0, "你", logprobs={"content": [rest_entry]})]))
    cut = "好".encode()[:1]
    raw += events.render(
        StreamChunk([ChoiceDelta(0, "", logprobs={"content": [_byte_entry(cut)]})])
    )
    raw += events.render(StreamChunk([ChoiceDelta(0, finish_reason="length")], Usage(1, 3)))
    raw += await events.close()
    parsed = _events(raw)
    deltas = [e for e in parsed if e["type"] == "response.output_text.delta"]
    assert [[lp["bytes"] for lp in e["logprobs"]] for e in deltas] == [[list(first), list(rest)]]
    (done,) = [e for e in parsed if e["type"] == "response.output_text.done"]
    assert [lp["bytes"] for lp in done["logprobs"]] == [list(first), list(rest), list(cut)]
    final = parsed[-1]["response"]["output"][-1]["content"][0]["logprobs"]
    assert final == done["logprobs"]


def test_a_whole_answers_text_holds_its_logprobs() -> None:
    """The whole response's `output_text` holds the choice's content logprobs."""
    choice = Choice(0, "Hi", "stop", {"content": [_entry("Hi")]}, reasoning="Hm")
    output = SHELL.output(choice)
    assert output[-1]["content"][0]["logprobs"] == [_entry("Hi")]
    assert SHELL.output(Choice(0, "Hi", "stop"))[-1]["content"][0]["logprobs"] == []
