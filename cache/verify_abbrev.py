"""Abbreviations for the candidate verifier: "2FA" stands for "two-factor authentication".

An initialism matches a run of words in the other text whose initials spell it (a digit
spells its number word: 2 -> "two"); short function words inside the run may be skipped
("ETA" = "estimated time of arrival"). A few common clipped forms are listed explicitly.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from cache.verify_lexicon import STOPWORDS

_DIGIT_WORDS = {
    "1": ("one", "single"),
    "2": ("two", "double", "dual"),
    "3": ("three", "triple"),
    "4": ("four",),
    "5": ("five",),
}
_SKIPPABLE = frozenset("of and the for to in on a an".split())
_INITIALISM = re.compile(r"[a-z0-9]{2,6}")
_NUMERONYM = re.compile(r"([a-z])([1-9][0-9]?)([a-z])")

# Clipped or informal forms -> the word they stand for (lowercase).
CLIPPED: dict[str, str] = {
    clipped: full
    for full, forms in {
        "password": "pw pwd passwd",
        "dictionary": "dict",
        "repository": "repo repos",
        "documentation": "docs doc",
        "environment": "env",
        "variable": "var vars",
        "function": "func fn",
        "parameter": "param params",
        "argument": "arg args",
        "specification": "spec specs",
        "directory": "dir",
        "description": "desc",
        "account": "acct acc",
        "message": "msg msgs",
        "database": "db",
        "authentication": "auth",
        "configuration": "config cfg",
        "information": "info",
        "application": "app",
        "appointment": "appt",
        "department": "dept",
        "number": "num",
        "quantity": "qty",
        "reference": "ref",
        "requirement": "req",
        "organization": "org",
        "administrator": "admin",
        "approximately": "approx",
        "statistics": "stats",
        "notification": "notif",
        "with": "w/",
        "without": "w/o",
        "versus": "vs",
        "because": "bc cuz",
        "please": "pls plz",
        "thanks": "thx",
        "laboratory": "lab labs",
        "advertisement": "ad ads advert",
        "temperature": "temp temps",
        "bicycle": "bike bikes",
        "university": "uni",
        "veterinarian": "vet",
        "doctor": "dr",
        "government": "govt gov",
        "international": "intl",
        "management": "mgmt",
        "manager": "mgr",
        "people": "ppl",
        "birthday": "bday",
        "conversation": "convo",
        "introduction": "intro",
        "demonstration": "demo",
        "asynchronous": "async",
        "identification": "id",
        "representative": "rep",
        "definition": "def",
        "abbreviation": "abbr",
        "gymnasium": "gym",
        "memorandum": "memo",
    }.items()
    for clipped in forms.split()
}


def expands_to(short: str, words: Sequence[str]) -> tuple[int, int] | None:
    """The word range [start, stop) of `words` (lowercase) that the initialism `short`
    (lowercase, 2-6 letters or digits, at least one letter) abbreviates, if any."""
    short = short.removesuffix("s") if len(short) > 2 else short  # APIs
    if not _INITIALISM.fullmatch(short) or short.isdigit() or short in words:
        return None
    for start in range(len(words)):
        stop = _match(short, words, start)
        if stop is not None:
            return start, stop
    return None


def _match(short: str, words: Sequence[str], start: int) -> int | None:
    position = start
    for index, char in enumerate(short):
        while (
            index > 0
            and position < len(words)
            and words[position] in _SKIPPABLE
            and not _starts(words[position], char, first=False)
        ):
            position += 1
        if position >= len(words) or not _starts(words[position], char, first=index == 0):
            return None
        position += 1
    return position


def _starts(word: str, char: str, first: bool = False) -> bool:
    if char.isdigit():
        return word in _DIGIT_WORDS.get(char, ())
    if first and word in STOPWORDS:
        return False  # "go" is not "good options"
    return word.startswith(char) and len(word) > 1


def clipped_of(word: str) -> str | None:
    """The full word a clipped form stands for ("pwd" -> "password"), if listed."""
    return CLIPPED.get(word)


def numeronym_of(short: str, word: str) -> bool:
    """`short` is `word` as a numeronym: its first and last letters around the count of
    letters between ("k8s" / "kubernetes", "i18n" / "internationalization")."""
    match = _NUMERONYM.fullmatch(short)
    return (
        match is not None
        and int(match[2]) >= 2
        and len(word) == int(match[2]) + 2
        and word[0] == match[1]
        and word[-1] == match[3]
        and word.isalpha()
    )
