"""Numbers as wire formats write them: ASCII digits only."""

from __future__ import annotations

MAX_DIGITS = 18
"""More than any count, id or status these hold (2**63 has 19 digits); `int` refuses over
4300, so a longer string would fail where it is read."""


def ascii_digits(text: str) -> bool:
    """Whether `text` is one to `MAX_DIGITS` of the digits 0-9, what a header, a query string,
    a token id or an error code means by a number. `str.isdigit` also takes "²", which `int`
    then refuses, and "١" or "１", which `int` reads as another script's digit."""
    return len(text) <= MAX_DIGITS and text.isascii() and text.isdigit()
