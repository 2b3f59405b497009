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


RAISED, LOWERED = "^", "_"
"""The units of raised and lowered numbers: a power or an index, never a plain number."""


def in_decimal_digits(text: str) -> tuple[str, list[tuple[str, str]]]:
    """`text` with every other numeral written in decimal digits and set apart ("step ②" is
    "step 2"), and its raised and lowered numbers taken out as numbers of their own, with the
    unit `RAISED` or `LOWERED`, so that "x²" / "x³", "2³" / "3²", "10⁻³" / "10⁻⁶" and
    "(x+1)²" / "2(x+1)" differ. A raised run after a letter stays glued to it in ASCII digits,
    so that "m²" is no metre ("3 m²" is not "300 cm"); after anything else it becomes a space,
    so that "10³" keeps its 10 and is not 103. A sign alone ("Na⁺") is left as it is."""
    if text.isascii():
        return text, []
    out: list[str] = []
    found: list[tuple[str, str]] = []
    i = 0
    while i < len(text):
        char = text[i]
        raised = _raised(char) if not char.isascii() else None
        if raised is None:
            numeral = _numeral(char) if not char.isascii() else None
            out.append(char if numeral is None else f" {numeral} ")
            i += 1
            continue
        end = i
        while end < len(text) and not text[end].isascii() and _raised(text[end]) is not None:
            end += 1
        run = "".join(_raised(c) or "" for c in text[i:end])
        digits = "".join(c for c in run if c.isdecimal())
        if not digits:
            out.append(text[i:end])
        else:
            sign = "-" if run[:1] in ("-", "−") else ""
            tag = RAISED if "super" in unicodedata.decomposition(char) else LOWERED
            found.append((sign + (digits.lstrip("0") or "0"), tag))
            glued = i > 0 and text[i - 1].isalpha()
            out.append(digits if glued else " ")
        i = end
    return "".join(out), found
