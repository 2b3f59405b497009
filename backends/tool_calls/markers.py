"""Finding call markup in text that arrives in pieces: where the first marker is, and how much
of the text's end could be a marker cut in two (held back until the next piece decides)."""

from __future__ import annotations

from collections.abc import Iterable


def first_marker(
    text: str, markers: Iterable[str], start: int = 0, end: int | None = None
) -> tuple[int, str] | None:
    """The earliest of `markers` in `text[start:end]` (the longest at a tie), with its index."""
    best: tuple[int, str] | None = None
    for marker in markers:
        index = text.find(marker, start, end)
        if index >= 0 and (
            best is None or index < best[0] or (index == best[0] and len(marker) > len(best[1]))
        ):
            best = (index, marker)
    return best


def partial_length(text: str, markers: Iterable[str]) -> int:
    """How many characters at the end of `text` could be the start of one of `markers`."""
    longest = 0
    for marker in markers:
        for size in range(min(len(marker) - 1, len(text)), longest, -1):
            if text.endswith(marker[:size]):
                longest = size
                break
    return longest


def is_partial(text: str, marker: str) -> bool:
    """Whether `text` is a proper, non-empty start of `marker` (more text may complete it)."""
    return 0 < len(text) < len(marker) and marker.startswith(text)
