"""An assistant message's tool calls sent back as history: each has its id, type, name and
arguments, as OpenAI requires, and no two calls of one message share an id."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from core.errors import InvalidRequest, UnsupportedParameter
from core.protocol import ChatCompletionRequest
from core.request_parsing import parse_request

USER = {"role": "user", "content": "hi"}


def _call(call_id: str = "c1", name: str = "f") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": "{}"}}


def _parse(*calls: dict[str, Any], answers: tuple[str, ...] = ()) -> ChatCompletionRequest:
    messages = [
        USER,
        {"role": "assistant", "content": None, "tool_calls": list(calls)},
        *({"role": "tool", "tool_call_id": answer, "content": "42"} for answer in answers),
    ]
    return parse_request(orjson.dumps({"model": "m", "messages": messages}), ChatCompletionRequest)


_GONE = object()


def _changed(path: str, value: Any = _GONE) -> dict[str, Any]:
    """A well-formed call with the field at `path` (`function.name`) set to `value`, or
    removed."""
    call = _call()
    *parents, last = path.split(".")
    holder = call
    for key in parents:
        holder = holder[key]
    if value is _GONE:
        del holder[last]
    else:
        holder[last] = value
    return call


@pytest.mark.parametrize("path", ["id", "type", "function", "function.name", "function.arguments"])
def test_a_call_missing_a_required_field_is_a_400_naming_it(path: str) -> None:
    """A call without its id, type, function, name or arguments is OpenAI's 400 naming it
    (`Missing required parameter: 'messages[1].tool_calls[1].function.arguments'.`)."""
    param = f"messages[1].tool_calls[1].{path}"
    with pytest.raises(InvalidRequest) as caught:
        _parse(_call("c0"), _changed(path))
    assert caught.value.param == param
    assert caught.value.message == f"Missing required parameter: '{param}'."


@pytest.mark.parametrize(
    ("path", "value", "said"),
    [
        ("id", None, "expected a string, but got null"),
        ("id", 7, "expected a string, but got an integer"),
        ("type", None, "expected a string, but got null"),
        ("function", None, "expected an object, but got null"),
        ("function", "f", "expected an object, but got a string"),
        ("function.name", None, "expected a string, but got null"),
        ("function.arguments", None, "expected a string, but got null"),
        ("function.arguments", {"a": 1}, "expected a string, but got an object"),
        ("function.arguments", True, "expected a string, but got a boolean"),
    ],
)
def test_a_call_field_of_the_wrong_type_is_a_400_naming_it(
    path: str, value: Any, said: str
) -> None:
    """A null or a value of another type where a call needs a string (or the function an
    object) is a 400 naming the field and saying what it got."""
    with pytest.raises(InvalidRequest, match=said) as caught:
        _parse(_changed(path, value))
    assert caught.value.param == f"messages[1].tool_calls[0].{path}"


def test_only_function_calls_are_taken() -> None:
    """A custom tool's call cannot be served here (an unsupported 400); any other type is an
    invalid value; both name the call's type."""
    custom = {"id": "c1", "type": "custom", "custom": {"name": "f", "input": "x"}}
    with pytest.raises(UnsupportedParameter) as unsupported:
        _parse(custom)
    assert unsupported.value.param == "messages[1].tool_calls[0].type"
    with pytest.raises(InvalidRequest, match="Invalid value: 'tool'") as invalid:
        _parse({**_call(), "type": "tool"})
    assert invalid.value.param == "messages[1].tool_calls[0].type"


@pytest.mark.parametrize("answers", [(), ("c1",), ("c1", "c1")])
def test_two_calls_of_one_message_with_one_id_are_a_400(answers: tuple[str, ...]) -> None:
    """Two calls sharing an id leave a tool message's `tool_call_id` naming either: a 400 naming
    the second call's id, whatever answers follow."""
    with pytest.raises(InvalidRequest, match="Duplicate value for") as caught:
        _parse(_call("c1", "f"), _call("c2", "g"), _call("c1", "h"), answers=answers)
    assert caught.value.param == "messages[1].tool_calls[2].id"


def test_well_formed_calls_pass_as_they_are() -> None:
    """Calls with distinct ids and every field, answered, are history as they were sent."""
    body = _parse(_call("c1"), _call("c2", "g"), answers=("c2", "c1"))
    assert body.messages[1].tool_calls == [_call("c1"), _call("c2", "g")]
