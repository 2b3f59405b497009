"""Numbers written with characters other than decimal digits, for the number check: raised
and lowered digits ("x²", "10⁻³", "H₂O"), circled, parenthesized and full-stop digits ("①",
"⑳", "⑴", "⒈"), Roman numeral signs ("Ⅻ") and vulgar fractions ("½"). `re`'s \\d matches
only decimal digits (category Nd), so these were no numbers at all: "step ①" was "step ②"."""

from __future__ import annotations

import re
import unicodedata

_DECIMAL = re.compile(r"\d")
_RAISED = ("<super>", "<sub>")
_SIGNS = frozenset("+-−")


def _raised(char: str) -> str | None:
    """The digit or sign a superscript or subscript character raises or lowers ("³" -> "3",
    "⁻" -> "−")."""
    tag, _, code = unicodedata.decomposition(char).partition(" ")
    if tag not in _RAISED or not code:
        return None
    base = chr(int(code.split()[0], 16))
    return base if base.isdecimal() or base in _SIGNS else None


def _numeral(char: str) -> str | None:
    """The value of a character that stands for a number on its own ("⑤" -> "5", "½" ->
    "0.5"), written in ASCII digits."""
    if unicodedata.category(char) not in ("No", "Nl"):
        return None
    value = unicodedata.numeric(char, None)
    if value is None:
        return None
    return str(int(value)) if value == int(value) else f"{value:g}"


def has_digits(text: str) -> bool:
    """Whether `text` writes a number in digits of any kind."""
    if _DECIMAL.search(text):
        return True
    return not text.isascii() and any(
        _raised(char) is not None or _numeral(char) is not None
        for char in text
        if not char.isascii()
    )


def in_decimal_digits(text: str) -> str:
    """`text` with every other numeral written in decimal digits and set apart, so that the
    number check reads its value and never merges it into a neighbour: "10³" is "10 3" (not
    103), "x²" is "x 2", "10⁻⁶" is "10 −6", "step ②" is "step 2"."""
    if text.isascii():
        return text
    out: list[str] = []
    raised_run = False
    for char in text:
        raised = _raised(char) if not char.isascii() else None
        if raised is not None:
            out.append(raised if raised_run else " " + raised)
            raised_run = True
            continue
        if raised_run:
            out.append(" ")
            raised_run = False
        numeral = _numeral(char) if not char.isascii() else None
        out.append(char if numeral is None else f" {numeral} ")
    if raised_run:
        out.append(" ")
    return "".join(out)
