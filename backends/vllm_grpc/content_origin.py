"""Where a chat choice's content came from in its decoded output, through the parsers it
passed (the reasoning parser, then the tool-call parser, then the whitespace held beside
calls), so that its logprobs can be those of its content's tokens (`held_logprobs`)."""

from __future__ import annotations

from collections.abc import Iterable

from backends.text_origin import Piece, Relay, split_origin


class ContentOrigin:
    """Positions are those of the decoded output after stop strings (what the parsers read)."""

    __slots__ = ("_decoded", "_loose", "_relay")

    def __init__(self, *, relayed: bool) -> None:
        self._decoded = 0
        # With both parsers, the tool-call parser reads the reasoning parser's content.
        self._relay = Relay() if relayed else None
        self._loose: list[Piece] = []  # the whitespace held beside calls

    @property
    def length(self) -> int:
        """The characters of the output read so far."""
        return self._decoded

    def decoded(self, length: int) -> list[Piece]:
        """The next `length` characters of the output, read as they are."""
        piece = (self._decoded, length)
        self._decoded += length
        return [piece]

    def answered(self, origin: Iterable[Piece]) -> list[Piece]:
        """The reasoning parser's content, in the output's positions. Written pieces stay
        (until `HeldLogprobs.show`), so that positions in the origin are those of the text."""
        pieces = list(origin)
        if self._relay is not None:
            self._relay.extend(pieces)
        return pieces

    def parsed(self, origin: Iterable[Piece]) -> list[Piece]:
        """The tool-call parser's content, in the output's positions (written pieces kept)."""
        if self._relay is not None:
            return self._relay.source(origin)
        return list(origin)

    def beside_calls(
        self, origin: list[Piece], body: int, *, drop_loose: bool, last: bool
    ) -> list[Piece]:
        """Mirrors `ChoiceDecoder._beside_calls` for a text of which the first `body`
        characters are shown after the held whitespace, the rest held (or, with no body, all
        of it held): the origin of what is shown."""
        head, tail = split_origin(origin, body)
        if body:
            shown, self._loose = self._loose + head, tail
        else:
            shown = []
            self._loose += tail
        if drop_loose:
            self._loose = []
        if last:
            shown, self._loose = shown + self._loose, []
        return shown
