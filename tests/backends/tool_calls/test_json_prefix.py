"""The JSON prefix scanner: it releases exactly the valid JSON an object's text holds, however
the text is split, holds back only tokens more text may change, and stops where JSON breaks."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from backends.tool_calls.json_prefix import JsonPrefix
from tests.backends.tool_calls.helpers import cut

VALID = [
    "{}",
    '{"a": 1}',
    '{"a": [1, -2.5e+3, true, false, null, "x\\"y\\u00e9\\\\"], "b": {"c": []}}',
    '{ "long" : 123456789012345678901234567890 , "s" : "é<tool_call>" }',
    '{"a": {"b": {"c": [[], [{}]]}}}',
]
BROKEN = {
    '{"a": 1,}': '{"a": 1,',
    '{"a": }': '{"a": ',
    '{"a": 01}': '{"a": 0',
    '{"a": "x\ny"}': '{"a": "x',
    '{"a": tru}': '{"a": ',
    '{"a": [1 2]}': '{"a": [1 ',
    '{"a": 1]': '{"a": 1',
    '{"a" 1}': '{"a" ',
    '{"a": "\\x"}': '{"a": "',
}


def _released(pieces: list[str], final: bool = True) -> tuple[str, JsonPrefix]:
    """What the scanner releases of `pieces` fed in turn (each call gets the held-back rest)."""
    scan, released, held = JsonPrefix(), [], ""
    for i, piece in enumerate(pieces):
        text = held + piece
        end = scan.scan(text, final and i == len(pieces) - 1)
        released.append(text[:end])
        held = text[end:]
        if scan.closed or scan.broken:
            break
    return "".join(released), scan


@pytest.mark.parametrize("text", VALID)
def test_a_valid_object_is_released_whole_and_closes(text: str) -> None:
    """All of it, and it closed; a trailing character after it is not taken."""
    released, scan = _released([text + " tail"])
    assert released == text and scan.closed and not scan.broken
    orjson.loads(released)


@pytest.mark.parametrize(("text", "valid"), BROKEN.items())
def test_invalid_json_breaks_where_it_stops_being_json(text: str, valid: str) -> None:
    """What came before the first impossible character is released; nothing after it."""
    released, scan = _released([text])
    assert released == valid and scan.broken


@given(st.sampled_from(VALID + list(BROKEN)), st.lists(st.integers(min_value=0), max_size=10))
def test_any_split_releases_the_same(text: str, points: list[int]) -> None:
    """Split anywhere, the same text is released, and ends the same way."""
    whole, scan = _released([text])
    released, split = _released(cut(text, points))
    assert released == whole and (split.closed, split.broken) == (scan.closed, scan.broken)


def test_tokens_more_text_may_change_are_held_back() -> None:
    """A number, a literal or an escape at the end waits; a string's inside does not."""
    assert JsonPrefix().scan('{"a": 12') == len('{"a": ')
    assert JsonPrefix().scan('{"a": tr') == len('{"a": ')
    assert JsonPrefix().scan('{"a": "x\\u00') == len('{"a": "x')
    assert JsonPrefix().scan('{"a": "some te') == len('{"a": "some te')
    assert JsonPrefix().scan('{"a": 12', final=True) == len('{"a": 12')
