"""Text an upstream cut mid-character: read, mended, and joined across a stream's events."""

from __future__ import annotations

import orjson
import pytest

from backends.split_text import Halves, mend, mend_inside, mend_json, read_cut

EMOJI = "\U0001f600"  # UTF-8 f0 9f 98 80; UTF-16 d83d de00


def _read(payload: bytes, *, streamed: bool = False) -> object:
    try:
        return orjson.loads(payload)
    except orjson.JSONDecodeError as exc:
        return read_cut(payload, exc, streamed=streamed)


@pytest.mark.parametrize(
    ("payload", "mended"),
    [(b'{"a": "x\xf0\x9f"}', "x\ufffd"), (b'{"a": "x\\ud83d"}', "x\ufffd")],
    ids=["raw-bytes", "high-half"],
)
def test_cut_text_is_read_and_mended(payload: bytes, mended: str) -> None:
    """Bytes that are no UTF-8 and escaped lone halves are read, and what is broken marked."""
    assert _read(payload) == {"a": mended}


def test_in_a_streams_event_the_cut_parts_are_kept_for_the_next() -> None:
    """Streamed text keeps a cut character's parts at its ends for `Halves` to join."""
    assert _read(b'{"content": "\\ude00x\\ud83d"}', streamed=True) == {"content": "\ude00x\ud83d"}


@pytest.mark.parametrize("payload", [b'{"a": "x\xf0\x9f"', b'{"a": NaN}', b'{"a": "\\ud83d",}'])
def test_json_malformed_otherwise_is_still_refused(payload: bytes) -> None:
    """Leniency covers cut characters only: broken JSON and NaN still fail as orjson's error."""
    with pytest.raises(orjson.JSONDecodeError):
        _read(payload)


def test_mend_joins_what_belongs_together_and_marks_the_rest() -> None:
    """A pair or a whole UTF-8 sequence becomes its character; a lone part becomes U+FFFD."""
    assert mend("a\ud83d\ude00b") == f"a{EMOJI}b"
    assert mend("a\udcf0\udc9f\udc98\udc80b") == f"a{EMOJI}b"  # bytes, as surrogateescape reads
    assert mend("a\ud83db") == "a\ufffdb"
    assert mend("a\udcf0\udc9fb") == "a\ufffdb"
    assert mend("\ud83dx\udcf0") == "\ufffdx\ufffd"  # both kinds at once: each part is lost


def test_mend_inside_keeps_the_edges_for_the_neighbouring_events() -> None:
    """Surrogates at either end may belong to the event before or after: kept as they are."""
    assert mend_inside("\ude00x\ud83dy\ud83d") == "\ude00x\ufffdy\ud83d"
    assert mend_inside("plain") == "plain"


def test_mend_json_mends_every_string_but_streamed_texts_edges() -> None:
    """Keys and values anywhere are mended; in a stream's event only the streamed text keeps
    its edges."""
    data = {"choices": [{"delta": {"content": "a\ud83d", "tool_calls": [{"id": "c\ud83d"}]}}]}
    assert mend_json(data) == {
        "choices": [{"delta": {"content": "a\ufffd", "tool_calls": [{"id": "c\ufffd"}]}}]
    }
    streamed = mend_json(data, streamed=True)["choices"][0]["delta"]
    assert streamed == {"content": "a\ud83d", "tool_calls": [{"id": "c\ufffd"}]}


def test_halves_carry_a_cut_character_to_its_choices_next_event() -> None:
    """The first part waits for the same choice and field; another choice is untouched; a
    choice's last event passes on what is left, as U+FFFD."""
    halves = Halves()
    assert halves.join(0, "text", "Hi \ud83d", last=False) == "Hi "
    assert halves.holding
    assert halves.join(1, "text", "other", last=False) == "other"
    assert halves.join(0, "reasoning", "", last=False) == ""
    assert halves.join(0, "text", "\ude00!", last=False) == f"{EMOJI}!"
    assert not halves.holding
    assert halves.join(0, "text", "x\udcf0\udc9f", last=False) == "x"
    assert halves.join(0, "text", "\udc98", last=False) == ""
    assert halves.join(0, "text", "\udc80", last=False) == EMOJI
    assert halves.join(0, "text", "\udcc3\udca9\udcc3", last=False) == "\u00e9"  # é, then half
    assert halves.join(0, "text", "\udca9", last=False) == "\u00e9"
    assert halves.join(0, "text", "end\ud83d", last=False) == "end"
    assert halves.join(0, "text", "", last=True) == "\ufffd"
    assert not halves.holding
