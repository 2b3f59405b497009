"""The writing system of a text, coarse enough to tell languages apart (latin, cyrillic, han,
kana, ...), for the verifier's language check."""

from __future__ import annotations

from collections import Counter

_SCRIPTS = (
    (0x0370, 0x03FF, "greek"),
    (0x0400, 0x052F, "cyrillic"),
    (0x0590, 0x05FF, "hebrew"),
    (0x0600, 0x06FF, "arabic"),
    (0x0900, 0x097F, "devanagari"),
    (0x0E00, 0x0E7F, "thai"),
    (0x1100, 0x11FF, "hangul"),
    (0x3040, 0x30FF, "kana"),
    (0x3400, 0x9FFF, "han"),
    (0xAC00, 0xD7AF, "hangul"),
)


def script_of(char: str) -> str:
    """The writing system of one letter (coarse: enough to tell languages apart)."""
    code = ord(char)
    if code < 0x0370:
        return "latin"
    for low, high, name in _SCRIPTS:
        if low <= code <= high:
            return name
    return "latin" if 0x1E00 <= code <= 0x1EFF else "other"


def dominant_script(text: str) -> str:
    if text.isascii():
        return "latin"
    counts = Counter(script_of(ch) for ch in text if ch.isalpha())
    if not counts:
        return "latin"
    if counts["kana"] and counts["han"]:
        counts["kana"] += counts.pop("han")  # Japanese mixes kanji with kana
    return counts.most_common(1)[0][0]
