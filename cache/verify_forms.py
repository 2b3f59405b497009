"""When a longer word is a form of a shorter one: an inflection ("container" / "containers",
"arrive" / "arrived") or a derivation that keeps the topic ("month" / "monthly", "valid" /
"validity", "install" / "installation"), and not a word that an ending makes another word of:
an agent ("print" / "printer", "farm" / "farmers", "charge" / "charger"), "-y" ("batter" /
"battery", "brand" / "brandy"), "-ment" ("ship" / "shipment", "depart" / "department").
Words of scripts written without spaces (Chinese, Japanese, Thai) are whole sentences to the
word splitter, so a shared start says nothing there. Pure Python over lowercase words.
"""

from __future__ import annotations

import unicodedata

INFLECTIONS = frozenset({"s", "es", "d", "ed", "ing"})
"""Endings that add number or tense to the word they end."""

_DERIVATIONS = {
    "ly": 5,
    "ity": 5,
    "ities": 5,
    "ness": 5,
    "ize": 5,
    "ise": 5,
    "ized": 5,
    "ised": 5,
    "ion": 6,
    "ions": 6,
    "ation": 6,
    "ations": 6,
}
"""Endings that keep the topic, with the shortest word they may end: on shorter words they make
other words too often ("bill" / "billion", "port" / "portion", "found" / "foundation", "near" /
"nearly")."""

AGENT_ENDINGS = ("er", "ers", "or", "ors")
"""Endings of an agent or a tool ("printer", "farmers", "driver"), or a comparative."""

_SPELLED_WITH_E = 7
"""The shortest word that an "e" added at its end leaves the same word: "program" /
"programme", not "plan" / "plane", "breath" / "breathe"."""

_CLIPPED_REST = 4
"""The fewest letters a longer word may add to a start of five letters or more to be that
word clipped ("intro" / "introductory"); fewer make another word ("count" / "country")."""

_OTHER_THING = ("ment", "ments", "er", "ers", "or", "ors", "ist", "ists")
"""Endings that make a longer word another thing however long it is ("depart" /
"departments", "guitar" / "guitarists")."""

_UNSPACED = ("CJK", "HIRAGANA", "KATAKANA", "THAI", "LAO", "KHMER", "MYANMAR", "TIBETAN")


def ending(short: str, long: str) -> str | None:
    """What `long` adds to `short`, read as a suffix ("charge" / "charger" adds "er"), or None
    when `long` does not start with `short`."""
    if not long.startswith(short):
        return None
    rest = long[len(short) :]
    if short.endswith("e") and rest[:1] in ("d", "r", "s"):
        return "e" + rest  # arrive/arrived, charge/charger
    return rest


def is_form(short: str, long: str) -> bool:
    """`long` is `short` inflected, derived without leaving its topic, or clipped to it."""
    rest = ending(short, long)
    if rest is None or not rest or unspaced(short):
        return False
    if rest in INFLECTIONS:
        return True
    if rest in _DERIVATIONS:
        return len(short) >= _DERIVATIONS[rest]
    if rest == "e":
        return len(short) >= _SPELLED_WITH_E  # hexagon/hexagone, program/programme
    return len(short) >= 5 and len(rest) >= _CLIPPED_REST and not rest.endswith(_OTHER_THING)


def unspaced(word: str) -> bool:
    """A word in a script written without spaces between words: to the word splitter a whole
    clause, whose forms and roots are not its words'."""
    return not word.isascii() and any(
        not char.isascii() and unicodedata.name(char, "").startswith(_UNSPACED) for char in word
    )
