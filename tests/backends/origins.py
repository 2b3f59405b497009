"""What the parser tests share about origins: the content a parser says it copied is there."""

from __future__ import annotations

from collections.abc import Iterable

from backends.text_origin import WRITTEN, Piece


def copied(source: str, content: str, origin: Iterable[Piece], written: set[str]) -> None:
    """`content` is the pieces of `origin`, in order: `source`'s text at each start, or, where
    the parser wrote it, one of `written`."""
    at = 0
    for start, length in origin:
        piece = content[at : at + length]
        assert len(piece) == length, (content, at, length)
        if start == WRITTEN:
            assert piece in written, piece
        else:
            assert source[start : start + length] == piece, (source, start, piece)
        at += length
    assert at == len(content), (content, at)
