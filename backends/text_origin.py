"""Where a parser's output text came from in its input, so that the tokens whose text became
an answer's content can be told from those of its thinking and its call markup.

An `Origin` describes a text piece by piece, in order: `(start, length)` is `length`
characters copied from the input at `start`; a start of `WRITTEN` is text the parser wrote
itself (a newline joining two messages, a marker it put back). The lengths add up to the
text's length.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

Piece = tuple[int, int]
Origin = tuple[Piece, ...]
WRITTEN = -1


def split_origin(origin: Iterable[Piece], at: int) -> tuple[list[Piece], list[Piece]]:
    """The origins of a text's first `at` characters and of the rest."""
    head: list[Piece] = []
    tail: list[Piece] = []
    for start, length in origin:
        if at >= length:
            head.append((start, length))
        elif at <= 0:
            tail.append((start, length))
        else:
            head.append((start, at))
            tail.append((WRITTEN if start == WRITTEN else start + at, length - at))
        at -= length
    return head, tail


class Relay:
    """Maps positions in a text made of origin pieces (one parser's output, fed to the next)
    back to the source that the pieces came from."""

    __slots__ = ("_end", "_pieces")

    def __init__(self) -> None:
        self._pieces: deque[tuple[int, int, int]] = deque()  # (position here, source start, length)
        self._end = 0

    def extend(self, origin: Iterable[Piece]) -> None:
        """The origin of the next text fed on."""
        for start, length in origin:
            if start != WRITTEN:
                self._pieces.append((self._end, start, length))
            self._end += length

    def source(self, origin: Iterable[Piece]) -> list[Piece]:
        """`origin`, given in positions of the text fed on, in positions of the source; text
        written along the way stays written (`(WRITTEN, length)`), so the lengths still add
        up to the text's. Pieces wholly before the earliest position asked for are let go:
        the parsers' output only moves forward."""
        found: list[Piece] = []
        pieces = self._pieces
        for start, length in origin:
            if start == WRITTEN:
                found.append((start, length))
                continue
            end = start + length
            while pieces and pieces[0][0] + pieces[0][2] <= start:
                pieces.popleft()
            at = start
            for here, source, size in pieces:
                if here >= end:
                    break
                low, high = max(start, here), min(end, here + size)
                if low < high:
                    if low > at:
                        found.append((WRITTEN, low - at))
                    found.append((source + low - here, high - low))
                    at = high
            if at < end:
                found.append((WRITTEN, end - at))
        return found
