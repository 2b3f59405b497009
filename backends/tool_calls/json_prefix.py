"""How much of a JSON value, read as text arrives, is certainly valid: a strict JSON scanner that
resumes where it stopped, so each piece of text is looked at once.

It says how far the text is a prefix of valid JSON (what may be released), whether the value has
closed, and where it broke (a character no valid JSON could have there). A token that more text
could still change (a number, `true`, an escape) is held back until it is whole; the inside of a
string is not: its characters are released as they come.

Markup that ends a call (`stops`) is recognized only where the scanner is outside a string:
there the value stops, and a tail that may start such markup waits; inside a string it is text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_WHITESPACE = re.compile(r"[ \t\n\r]*")
_STRING_BODY = re.compile(r'(?:[^"\\\x00-\x1f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*')
_ESCAPE_START = re.compile(r"\\(?:u[0-9a-fA-F]{0,3})?")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_NUMBER_START = re.compile(r"-?[0-9]*(?:\.[0-9]*)?(?:[eE][+-]?[0-9]*)?")
_LITERALS = ("true", "false", "null")
_CLOSER = {"{": "}", "[": "]"}

_VALUE, _KEY, _COLON, _NEXT = range(4)  # what comes next


class JsonPrefix:
    """One JSON value, scanned as its text arrives (each call continues the last one's text)."""

    __slots__ = (
        "_empty",
        "_expect",
        "_in_string",
        "_stack",
        "_stop_chars",
        "_stops",
        "broken",
        "closed",
        "stopped",
    )

    def __init__(self, stops: Sequence[str] = ()) -> None:
        self._stack: list[str] = []  # the closing bracket of each open container
        self._expect = _VALUE
        self._empty = False  # a container just opened: its closing bracket may come
        self._in_string = False
        self._stops = stops
        self._stop_chars = frozenset(stop[0] for stop in stops)
        self.closed = False  # the value ended
        self.broken = False  # the text stopped being JSON
        self.stopped = False  # one of `stops` came where a token should

    @classmethod
    def rest_of_object(cls, stops: Sequence[str] = ()) -> JsonPrefix:
        """A scanner for what follows a member's value inside an object, up to its `}`."""
        scanner = cls(stops)
        scanner._stack.append("}")
        scanner._expect = _NEXT
        return scanner

    def scan(self, text: str, final: bool = False, start: int = 0) -> int:
        """Where, in `text` from `start`, what is certainly part of the value ends: at its end
        once it closes; before a token more text may complete, or one of `stops` (or a tail
        that may start one); where it broke. `final`: no more text comes (a number at the end
        is whole)."""
        i, n = start, len(text)
        while i < n and not (self.closed or self.broken or self.stopped):
            if self._in_string:
                i = _past(_STRING_BODY, text, i)
                if i == n:
                    break
                if text[i] == '"':
                    self._in_string = False
                    i += 1
                    continue
                if not final and _ESCAPE_START.fullmatch(text, i) is not None:
                    break  # an escape that more text completes
                self.broken = True
                break
            i = _past(_WHITESPACE, text, i)
            if i == n or (text[i] in self._stop_chars and self._at_stop(text, i, final)):
                break
            stop = self._token(text, i, final)
            if stop < 0:  # more text needed to read the token at i
                break
            i = stop
        return i

    def _at_stop(self, text: str, i: int, final: bool) -> bool:
        """Whether the scan halts at `i`: one of `stops` is there (`stopped`), or, with more
        text to come, the rest of `text` may start one."""
        for stop in self._stops:
            if text.startswith(stop, i):
                self.stopped = True
                return True
            if not final and len(text) - i < len(stop) and stop.startswith(text[i:]):
                return True
        return False

    def _token(self, text: str, i: int, final: bool) -> int:
        """Past the token at `i` (`self.broken` set where it cannot be one), or -1 to wait."""
        char, expect = text[i], self._expect
        if expect == _KEY:
            if char == '"':
                self._expect, self._in_string = _COLON, True
                return i + 1
            if char == "}" and self._empty:
                return self._close(i)
        elif expect == _COLON:
            if char == ":":
                self._expect = _VALUE
                return i + 1
        elif expect == _NEXT:
            if char == ",":
                self._expect = _KEY if self._stack[-1] == "}" else _VALUE
                self._empty = False
                return i + 1
            if char == self._stack[-1]:
                return self._close(i)
        elif char in _CLOSER:
            self._stack.append(_CLOSER[char])
            self._expect = _KEY if char == "{" else _VALUE
            self._empty = True
            return i + 1
        elif char == "]" and self._empty and self._stack and self._stack[-1] == "]":
            return self._close(i)
        elif char == '"':
            self._expect, self._in_string = _NEXT, True
            return i + 1
        else:
            return self._scalar(text, i, final)
        self.broken = True
        return i

    def _scalar(self, text: str, i: int, final: bool) -> int:
        """Past a number or literal at `i`; -1 while more text may still change it."""
        number = _NUMBER.match(text, i)
        if not final and _past(_NUMBER_START, text, i) == len(text) > i:
            return -1  # digits (or a sign, a point, an exponent) up to the end: may go on
        if number is not None:
            return self._value_end(number.end())
        for literal in _LITERALS:
            if text.startswith(literal, i):
                return self._value_end(i + len(literal))
            if not final and literal.startswith(text[i:]):
                return -1
        self.broken = True
        return i

    def _value_end(self, end: int) -> int:
        self._expect = _NEXT
        self._empty = False
        if not self._stack:
            self.closed = True
        return end

    def _close(self, i: int) -> int:
        self._stack.pop()
        return self._value_end(i + 1)


def _past(pattern: re.Pattern[str], text: str, i: int) -> int:
    """Past what `pattern` (which may match nothing) matches at `i`."""
    found = pattern.match(text, i)
    return i if found is None else found.end()
