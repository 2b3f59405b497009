"""Numbers as wire formats write them: ASCII digits only."""

from __future__ import annotations


def ascii_digits(text: str) -> bool:
    """Whether `text` is one or more of the digits 0-9, what a header, a query string, a token
    id or an error code means by a number. `str.isdigit` also takes "²", which `int` then
    refuses, and "١" or "１", which `int` reads as another script's digit."""
    return text.isascii() and text.isdigit()
