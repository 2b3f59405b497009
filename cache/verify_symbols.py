"""Operators and symbols for the candidate verifier: the sequence of them a text writes.

The embedding model and the word features read "What is 7 + 5?" and "What is 7 - 5?", "x >>= 2"
and "x <<= 2", or a 👍 and a 👎 review alike: the words are the same. Two prompts are served
one answer only if they write the same operators in the same order. Prose punctuation does
not count, nor what only joins a word ("two-factor", "and/or", "AT&T"), lists a line ("- item"),
or belongs to a number or a name that the other checks compare ("50%", "$5", "C++"). An
operator spelled as a word between operands counts as its symbol: "12 times 4" is "12 * 4".
"""

from __future__ import annotations

import re

from cache.verify_numbers import NUMBER_WORDS

_PROSE = frozenset(".,;:?!'\"’‘“”…–—()`")
"""Punctuation a run made only of which is prose, not an operator."""
_SENTENCE_END = ".,;?!'\"’‘“”…`"
_JOINERS = frozenset({"-", "&", "/", "'", "’", "@"})
"""A single one of these between a letter and a letter or digit joins a word: "e-mail",
"and/or", "R&D", "COVID-19", "a 300-mile drive" (between two digits it is an operator)."""
_LIST_MARKERS = frozenset({"-", "*", "•", "+", ">", "#", "##", "###", "####"})
_NUMBER_MARKS = frozenset("%°$€£¥#")
"""Marks of a number the number check compares: "50%", "$5", "order #123"."""
_NAMES = re.compile(r"\b[A-Za-z](?:\+\+|#)(?![\w#+])")  # C++, c#, F#
_OPERATOR_WORDS = (
    ("greater than or equal to", ">="),
    ("less than or equal to", "<="),
    ("greater than", ">"),
    ("less than", "<"),
    ("multiplied by", "*"),
    ("divided by", "/"),
    ("plus", "+"),
    ("minus", "-"),
    ("times", "*"),
    ("to", "-"),
)


def _tokens(words: tuple[tuple[str, str], ...]) -> re.Pattern[str]:
    spelled = "|".join(w.replace(" ", r"\s+") for w, _ in words)
    return re.compile(r"(?P<word>\b(?:" + spelled + r")\b)|(?P<run>[^\w\s]+)", re.IGNORECASE)


_TOKENS = _tokens(_OPERATOR_WORDS)
_TOKENS_NO_RANGE = _tokens(tuple(w for w in _OPERATOR_WORDS if w[0] != "to"))
"""Without "to", for texts with no digit: a range is "5 to 10", and "to" is everywhere."""
_DIGIT = re.compile(r"\d")
_SYMBOL_OF = dict(_OPERATOR_WORDS)
_LAST_WORD = re.compile(r"([\w.,]+)\s*$")
_FIRST_WORD = re.compile(r"^\s*(\w+)")


def symbols(text: str) -> tuple[str, ...]:
    """The operators and symbols of `text`, sorted: a paraphrase may reorder its clauses."""
    if _NAMES.search(text):
        text = _NAMES.sub(lambda m: m.group()[0], text)
    found: list[str] = []
    tokens = _TOKENS if _DIGIT.search(text) else _TOKENS_NO_RANGE
    for match in tokens.finditer(text):
        if match.lastgroup == "word":
            symbol = _spelled_operator(text, match)
        else:
            symbol = _operator(text, match.start(), match.end())
        if symbol:
            found.append(symbol)
    return tuple(sorted(found))


def _spelled_operator(text: str, match: re.Match[str]) -> str | None:
    """The symbol of an operator word between operands ("12 times 4", "seven plus eight")."""
    word = " ".join(match.group().casefold().split())
    numbers_only = word == "to"  # a range, "5 to 10" as "5-10", not "x to y"
    if not _between_operands(text, match.start(), match.end(), numbers_only=numbers_only):
        return None  # "Disney plus", "three times a day"
    return _SYMBOL_OF[word]


def _between_operands(text: str, start: int, end: int, *, numbers_only: bool = False) -> bool:
    before = _LAST_WORD.search(text[max(0, start - 40) : start])
    after = _FIRST_WORD.search(text[end : end + 40])
    return _operand(before, numbers_only) and _operand(after, numbers_only)


def _operand(found: re.Match[str] | None, numbers_only: bool = False) -> bool:
    """A number, a number word or a one-letter variable ("x", but not "a" or "I")."""
    word = found.group(1).strip(".,") if found is not None else ""
    if not word:
        return False
    if len(word) == 1 and word.isalpha() and not numbers_only:
        return word not in ("a", "A", "I")
    return word[0].isdigit() or word.casefold() in NUMBER_WORDS


def _operator(text: str, start: int, end: int) -> str | None:
    run = text[start:end]
    if _PROSE.issuperset(run):
        return None
    before = text[start - 1] if start else " "
    after = text[end] if end < len(text) else " "
    joined = before.isalnum() and after.isalnum()
    if run in _JOINERS and joined and (before.isalpha() or after.isalpha() or run == "@"):
        return None
    if run in _LIST_MARKERS and after in " \t":
        line_start = text.rfind("\n", 0, start) + 1
        if not text[line_start:start].strip():
            return None
    if run[-1] in _NUMBER_MARKS and after.isdigit():
        run = run[:-1]  # "-$20"
    if run and run[0] in _NUMBER_MARKS and before.isdigit():
        run = run[1:]  # "50%)"
    if not run or _PROSE.issuperset(run):
        return None
    if run == "#" and after.isalnum():
        return None  # "#general", "issue #12"
    spaced = before.isspace() and after.isspace()
    if run == "-" and spaced and not _between_operands(text, start, end):
        return None  # a dash between words
    if after == "\n" or end == len(text):
        run = run.rstrip(_SENTENCE_END)
    return run or None
