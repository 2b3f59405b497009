"""Tool calls from OpenAI-compatible upstreams made canonical: indexes, one head per call,
no nulls, made-up ids, arguments as strings."""

from __future__ import annotations

from typing import Any

import orjson

from backends import openai_decode as decode
from backends.upstream_calls import CallFragments, arguments_text, whole_calls


def _streamed(*deltas: list[dict[str, Any]]) -> list[list[dict[str, Any]] | None]:
    """Each event's tool-call fragments after `CallFragments`, for one choice."""
    calls = CallFragments()
    return [calls.fragments(0, delta) for delta in deltas]


def _head(index: int, call_id: str, name: str, arguments: str = "") -> dict[str, Any]:
    function = {"name": name, "arguments": arguments}
    return {"index": index, "id": call_id, "type": "function", "function": function}


def _more(index: int, arguments: str) -> dict[str, Any]:
    return {"index": index, "function": {"arguments": arguments}}


def test_canonical_fragments_pass_as_they_are() -> None:
    """A head with id, type and name, then argument fragments: unchanged."""
    head = _head(0, "call_a", "get_weather")
    assert _streamed([head], [_more(0, '{"city"')], [_more(0, ': "Paris"}')]) == [
        [head],
        [_more(0, '{"city"')],
        [_more(0, ': "Paris"}')],
    ]


def test_fragments_without_an_index_get_their_calls() -> None:
    """No `index` anywhere: a new id starts the next call, a fragment without one continues
    the last (the official stream helper raised on a missing index)."""
    got = _streamed(
        [{"id": "call_a", "type": "function", "function": {"name": "f", "arguments": ""}}],
        [{"function": {"arguments": "{}"}}],
        [{"id": "call_b", "type": "function", "function": {"name": "g", "arguments": "{"}}],
        [{"function": {"arguments": "}"}}],
    )
    assert got == [
        [_head(0, "call_a", "f")],
        [_more(0, "{}")],
        [_head(1, "call_b", "g", "{")],
        [_more(1, "}")],
    ]


def test_a_head_repeated_in_every_fragment_is_passed_on_once() -> None:
    """An upstream that repeats id, type and name in each fragment: the client would join
    them into `call_acall_a`; only the arguments go on after the head."""
    fragment = {"index": 0, "id": "call_a", "type": "function", "function": {"name": "f"}}
    got = _streamed(
        [{**fragment, "function": {"name": "f", "arguments": '{"a"'}}],
        [{**fragment, "function": {"name": "f", "arguments": ": 1}"}}],
    )
    assert got == [[_head(0, "call_a", "f", '{"a"')], [_more(0, ": 1}")]]


def test_nulls_are_dropped_and_an_empty_continuation_is_nothing() -> None:
    """Explicit nulls in a continuation (the helper asserted on `type: null`) are dropped; a
    continuation that brings no arguments is no fragment at all."""
    got = _streamed(
        [
            {
                "index": 0,
                "id": "call_a",
                "type": "function",
                "function": {"name": "f", "arguments": None},
            }
        ],
        [{"index": 0, "id": None, "type": None, "function": {"name": None, "arguments": "{}"}}],
        [{"index": 0, "id": None, "type": None, "function": {"name": None, "arguments": None}}],
    )
    assert got == [[_head(0, "call_a", "f")], [_more(0, "{}")], None]


def test_a_call_without_an_id_gets_one() -> None:
    """No id: one is made up, as OpenAI's look, so the answer can be sent back with its tool
    results (a tool message must name its call)."""
    first, more = _streamed(
        [{"index": 0, "function": {"name": "f", "arguments": "{"}}], [_more(0, "}")]
    )
    (head,) = first or []
    assert head["id"].startswith("call_") and len(head["id"]) == 29
    assert more == [_more(0, "}")]


def test_arguments_sent_as_an_object_become_its_json() -> None:
    """`arguments` as a JSON object (the Responses stream broke off joining it): its compact
    JSON text, whole and streamed."""
    assert arguments_text({"city": "Paris"}) == '{"city":"Paris"}'
    assert arguments_text(None) == ""
    got = _streamed([{"index": 0, "id": "c", "function": {"name": "f", "arguments": {"x": 1}}}])
    assert got == [[_head(0, "c", "f", '{"x":1}')]]
    (call,) = whole_calls([{"function": {"name": "f", "arguments": {"x": [1, 2]}}}]) or []
    assert call["function"] == {"name": "f", "arguments": '{"x":[1,2]}'}
    assert call["type"] == "function" and call["id"].startswith("call_")


def test_choices_keep_their_own_calls() -> None:
    """Two choices' first calls are both index 0, each with its head."""
    calls = CallFragments()
    first = calls.fragments(0, [{"id": "a", "function": {"name": "f", "arguments": ""}}])
    second = calls.fragments(1, [{"id": "b", "function": {"name": "f", "arguments": ""}}])
    assert first == [_head(0, "a", "f")] and second == [_head(0, "b", "f")]


def test_a_whole_answer_from_a_quirky_upstream_decodes_canonical() -> None:
    """A whole chat answer whose call has no id, a null type and object arguments."""
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"type": None, "function": {"name": "f", "arguments": {"q": "é"}}}],
    }
    body = {"choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}]}
    (choice,) = decode.completion(orjson.dumps(body), "chat").choices
    (call,) = choice.tool_calls or []
    assert call["type"] == "function" and call["id"].startswith("call_")
    assert orjson.loads(call["function"]["arguments"]) == {"q": "é"}
