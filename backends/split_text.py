"""Text an OpenAI-compatible upstream cut in the middle of a character.

Two kinds of server do it while streaming: one that sends a token's bytes as they come, so an
emoji's UTF-8 bytes straddle two events (raw bytes that are no UTF-8 on their own), and one
whose strings are UTF-16 (Java, JavaScript) and escapes half a surrogate pair in each event
(`"\\ud83d"`, then `"\\ude00"`). orjson refuses both, and one emoji would cost the whole
answer. `read_cut` reads such JSON as Python strings holding lone surrogates (raw bytes as
U+DC80-U+DCFF, as the `surrogateescape` handler writes them) and `mend`s them back into text,
pairs joined into their character and bytes decoded, what stays broken becoming U+FFFD; in a
stream's text, `Halves` carries a cut character's first part to its choice's next event.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

import orjson

_LOW, _HIGH = "\ud800", "\udfff"
_HELD_MOST = 3  # a UTF-8 character's bytes before its last; one UTF-16 high half


def read_cut(payload: bytes, error: orjson.JSONDecodeError, *, streamed: bool = False) -> Any:
    """JSON orjson refused with `error`, read as text with characters cut in it, every string
    mended (`mend_json`). Raises `error` when the JSON is malformed otherwise."""
    try:
        text = payload.decode("utf-8", "surrogateescape")
        data = json.loads(text, parse_constant=_no_constant)
    except ValueError:
        raise error from None
    return mend_json(data, streamed=streamed)


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def broken(text: str) -> bool:
    """Whether a string may hold part of a character (any surrogate)."""
    return any(_LOW <= c <= _HIGH for c in text)


def mend(text: str) -> str:
    """The text with bytes decoded and surrogate pairs joined; lone halves and bytes that are
    no UTF-8 become U+FFFD."""
    # With UTF-16 halves in it the bytes cannot be decoded first (each becomes U+FFFD).
    with contextlib.suppress(UnicodeEncodeError):
        text = text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def mend_json(value: Any, *, streamed: bool = False) -> Any:
    """A decoded JSON value with every string in it mended; with `streamed` (a stream's
    event), the streamed text (`content`, `text`, `reasoning`, `reasoning_content`, and a
    tool call's `arguments`) only `mend_inside`, for `Halves` to join with its neighbours."""
    return _mended(value, None, streamed)


_STREAMED = frozenset({"content", "text", "reasoning", "reasoning_content", "arguments"})


def _mended(value: Any, key: str | None, streamed: bool) -> Any:
    if isinstance(value, str):
        if not broken(value):
            return value
        return mend_inside(value) if streamed and key in _STREAMED else mend(value)
    if isinstance(value, list):
        return [_mended(item, None, streamed) for item in value]
    if isinstance(value, dict):
        return {_mended(k, None, False): _mended(v, k, streamed) for k, v in value.items()}
    return value


def mend_inside(text: str) -> str:
    """The text mended but for a run of surrogates at either end, which may be part of a
    character cut between this event and the one before or after it."""
    if not broken(text):
        return text
    head = _edge_run(text)
    tail = _cut_at_end(text[head:])
    middle = text[head : len(text) - tail]
    return text[:head] + mend(middle) + text[len(text) - tail :]


def _edge_run(text: str) -> int:
    """How many surrogates (at most `_HELD_MOST`) the text starts with: the rest, perhaps, of
    a character the event before began."""
    run = 0
    while run < min(len(text), _HELD_MOST) and _LOW <= text[run] <= _HIGH:
        run += 1
    return run


def _cut_at_end(text: str) -> int:
    """How many characters at the end of the text begin a character it does not finish: a
    UTF-16 high half, or a UTF-8 lead byte with fewer of its continuation bytes than it
    needs (bytes as `surrogateescape` reads them, U+DC80-U+DCFF)."""
    if text and "\ud800" <= text[-1] <= "\udbff":
        return 1
    for back in range(1, min(len(text), _HELD_MOST) + 1):
        code = ord(text[-back]) - 0xDC00
        if not 0x80 <= code <= 0xFF:
            return 0
        if code & 0xC0 != 0x80:  # a lead byte: how long its character is
            needs = 2 if code & 0xE0 == 0xC0 else 3 if code & 0xF0 == 0xE0 else 4
            return back if code & 0xF8 != 0xF8 and needs > back else 0
    return 0


class Halves:
    """The cut characters' first parts of one stream, per choice and field, until the next
    event of the same choice brings the rest."""

    __slots__ = ("_held",)

    def __init__(self) -> None:
        self._held: dict[tuple[int, str], str] = {}

    @property
    def holding(self) -> bool:
        """Whether some choice's next event must be joined to what came before it."""
        return bool(self._held)

    def join(self, index: int, field: str, text: str, last: bool) -> str:
        """The text of a choice's event to pass on: what was held before it, then its own,
        less a cut character's first part at its end (held for the next event) unless it is
        the choice's `last`."""
        text = self._held.pop((index, field), "") + text
        if not last:
            tail = _cut_at_end(text)
            if tail:
                self._held[(index, field)] = text[len(text) - tail :]
                text = text[: len(text) - tail]
        return mend(text) if broken(text) else text
