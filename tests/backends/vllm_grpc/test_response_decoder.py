"""A response's decoders: call deltas joined into whole calls, the prompt's size reported once."""

from __future__ import annotations

from typing import Any

from backends.vllm_grpc.response_decoder import whole_calls


def test_whole_calls_join_each_calls_arguments_in_order() -> None:
    """Deltas after a call's first are its arguments' continuation; the index is dropped."""
    deltas: list[dict[str, Any]] = [
        {"index": 0, "id": "a", "type": "function", "function": {"name": "f", "arguments": ""}},
        {"index": 0, "function": {"arguments": '{"x": '}},
        {"index": 1, "id": "b", "type": "function", "function": {"name": "g", "arguments": "{"}},
        {"index": 0, "function": {"arguments": "1}"}},
        {"index": 1, "function": {"arguments": "}"}},
    ]
    calls = whole_calls(deltas)
    assert calls == [
        {"id": "a", "type": "function", "function": {"name": "f", "arguments": '{"x": 1}'}},
        {"id": "b", "type": "function", "function": {"name": "g", "arguments": "{}"}},
    ]
    assert deltas[0]["function"]["arguments"] == ""  # the deltas themselves are untouched
