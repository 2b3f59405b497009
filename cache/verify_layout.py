"""Whether two texts of the same words are also laid out alike: the verifier's first check,
since a semantic match never sees whitespace otherwise."""

from __future__ import annotations


def same_layout(a: str, b: str) -> bool:
    """Whether two texts of the same words also break and indent their lines alike and start
    and end alike: only the width of a gap inside a line may differ. A line moved into a loop
    is another program, an indented YAML key another document, and a raw completion prompt
    ending in a space another prompt."""
    if a == b:
        return True
    lines_a, lines_b = a.split("\n"), b.split("\n")
    return len(lines_a) == len(lines_b) and all(
        _edges(x) == _edges(y) for x, y in zip(lines_a, lines_b, strict=True)
    )


def _edges(line: str) -> tuple[str, bool]:
    """A line's indentation, and whether it ends in whitespace."""
    stripped = line.lstrip()
    return line[: len(line) - len(stripped)], stripped != stripped.rstrip()
