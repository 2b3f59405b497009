"""Quantities in text for the candidate verifier: digits with separators, signs, currencies
and units, and spelled-out numbers, each normalized to (value, canonical unit)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from cache.verify_dates import times_and_dates
from cache.verify_digits import in_decimal_digits
from cache.verify_units import CURRENCY_SYMBOLS, UNITS, is_quantity

ONES = {
    "zero": 0,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "thirteen": 13,
    "fourteen": 14,
    "fifteen": 15,
    "sixteen": 16,
    "seventeen": 17,
    "eighteen": 18,
    "nineteen": 19,
    "dozen": 12,
    # How many times: "charged twice" / "charged once" ("once" is left out: "once I pay").
    "twice": 2,
    "thrice": 3,
}
# "one" is left out on purpose: "which one", "one of" are rarely a quantity.
TENS = {
    "twenty": 20,
    "thirty": 30,
    "forty": 40,
    "fifty": 50,
    "sixty": 60,
    "seventy": 70,
    "eighty": 80,
    "ninety": 90,
}
SCALES = {"hundred": 100, "thousand": 1000, "million": 10**6, "billion": 10**9}


_MULTIPLES = frozenset({"twice", "thrice"})
FRACTIONS = {"half": "0.5", "halve": "0.5", "quarter": "0.25"}
"""Parts of a quantity ("half an hour" is 30 minutes; "half a cup" is not a cup)."""
MULTIPLIERS = {"double": 2, "triple": 3, "quadruple": 4}
"""Multiples written as one word: "double the dose" is "twice the dose"."""
_FORTNIGHT = frozenset({"fortnight", "fortnights"})
_ONE_OF = frozenset({"a", "an"})
_RATE_WORDS = frozenset({"once", "times", "per"})
_COUNT_BREAKS = frozenset(
    {"or", "and", "in", "within", "for", "after", "than", "about", "over", "under", "to", "by"}
)
"""Words that end the counted thing before "a week": "3 days or a week" is two durations, and
"3 workouts a week" a rate."""
_COUNTED_UNITS = frozenset({"h", "d", "wk", "mo", "y", "min", "mi", "km", "kg", "g", "oz", "t"})
"""Units that "a" or "an" counts as one of: "within an hour" is "within 60 minutes"."""
ORDINALS = {
    "third": 3,
    "fourth": 4,
    "fifth": 5,
    "sixth": 6,
    "seventh": 7,
    "eighth": 8,
    "ninth": 9,
    "tenth": 10,
    "eleventh": 11,
    "twelfth": 12,
    "twentieth": 20,
    "thirtieth": 30,
}
"""Spelled-out ordinals ("the third week" / "the 3rd week"); "first" and "second" are left
out: "first, log in", "wait a second" are rarely positions."""
WORD_SPELLINGS = {"1st": "first", "2nd": "second", "1": "one"}
"""The words of the numbers the extractor leaves uncounted when spelled out: the word checks
read "the 1st floor" as "the first floor", "1 bitcoin" as "one bitcoin" (the number check reads
the digits from the text)."""
_INSIDE_NUMBER = re.compile(r"[.,/:]\d")


def spelled(word: str, text: str, start: int) -> str:
    """`word`, found at `start` of `text`, as `WORD_SPELLINGS` spells it, unless it is a part of
    a longer number ("1.5", "1,000", "1/2", "1:30")."""
    spelling = WORD_SPELLINGS.get(word)
    if spelling is None:
        return word
    end = start + len(word)
    if _INSIDE_NUMBER.match(text, end) or _INSIDE_NUMBER.match(text, max(start - 1, 0), end):
        return word
    return spelling


CLOCK_WORDS = {"noon": "12:00", "midnight": "00:00"}
NUMBER_WORDS = (
    frozenset(ONES)
    | frozenset(TENS)
    | frozenset(SCALES)
    | frozenset(ORDINALS)
    | frozenset(CLOCK_WORDS)
    | frozenset(FRACTIONS)
    | frozenset(MULTIPLIERS)
    | _FORTNIGHT
)
NUMBER_VALUES = {**ONES, **TENS}

_NUMBER = re.compile(
    r"(?<![\w.])(?:(?P<cur>[$€£¥₹])\s?)?(?P<sign>[-−])?(?P<num>\d+(?:[.,]\d+)*)"
    r"(?:(?P<gap>[ \-]?)(?P<unit>%|°[cf]?|[$€£¥₹]|[a-zµ]+(?:/[a-z]+)?)(?!\w))?"
)
_THOUSANDS = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?")
_DECIMAL_COMMA = re.compile(r"\d{1,3}(?:\.\d{3})+,\d{1,2}")
"""Continental grouping with a decimal comma ("12.400,00"); "12.400" alone stays ambiguous."""


def counts(before: str, word: str) -> bool:
    """`word` is the unit of the number `before` ("10 percent", "ten percent", "one hour"):
    compared, with its number, by the number check."""
    if word not in UNITS:
        return False
    return before.isdigit() or before in NUMBER_WORDS or before == "one" or is_quantity(before)


def _counted_unit(word: str) -> str | None:
    """The unit a spelled-out unit word names, if "a" or "an" before it counts one of it (a
    whole word, not a symbol: "a m" is no metre)."""
    unit = UNITS.get(word)
    return unit if unit in _COUNTED_UNITS and len(word) > 2 and word.isalpha() else None


def one_of(words: Sequence[str], i: int) -> tuple[str, str] | None:
    """ "a day", "an hour" at `i` as one of that unit, unless it is the per-unit of a rate
    ("twice a day", "8 hours a day", "60 miles an hour") or the rest of a fraction ("half an
    hour", counted with the fraction)."""
    if words[i] not in _ONE_OF or i + 1 == len(words):
        return None
    unit = _counted_unit(words[i + 1])
    before = words[i - 1] if i > 0 else ""
    if unit is None or before in _RATE_WORDS or before in UNITS or before in NUMBER_WORDS:
        return None
    return None if _counted_before(words, i) else ("1", unit)


def _counted_before(words: Sequence[str], i: int) -> bool:
    """A number counts the thing just before the "a" at `i`, so "a week" is its per-unit: "3
    personal workouts a week" is "3 ... per week"."""
    for word in reversed(words[max(i - 3, 0) : i]):
        if word.isdigit() or is_quantity(word) or word in NUMBER_WORDS:
            return True
        if word in _COUNT_BREAKS or word in _ONE_OF:
            return False
    return False


def _unit_after(words: Sequence[str], i: int) -> str:
    """The unit a fraction at `i` takes a part of: "half an hour", "a quarter of a mile"."""
    for word in words[i + 1 : i + 4]:
        if word in UNITS:
            return UNITS[word]
        if word not in _ONE_OF and word not in ("of", "the"):
            break
    return ""


def number_words(words: list[str]) -> list[tuple[str, str]]:
    """Spelled-out quantities ("thirty", "twenty five", "two hundred") and the unit after them."""
    found: list[tuple[str, str]] = []
    total = current = 0
    active = False
    padded = [*words, ""]
    for i, word in enumerate(padded):
        if word in CLOCK_WORDS:
            found.append((CLOCK_WORDS[word], "clock"))  # "noon" is 12pm is 12:00
        elif word in FRACTIONS and not active:
            found.append((FRACTIONS[word], _unit_after(words, i)))
        elif word in MULTIPLIERS and not active:
            found.append((str(MULTIPLIERS[word]), "x"))
        elif word in _FORTNIGHT and not active:
            found.append(("2", "wk"))
        elif word in _ONE_OF and not active and (one := one_of(words, i)) is not None:
            found.append(one)
        elif word in _MULTIPLES and not active:
            found.append((str(ONES[word]), "x"))  # "twice" is "two times" is "2x"
        elif word in ORDINALS:
            found.append((str(total + current + ORDINALS[word]), "ord"))  # "twenty fifth"
            total = current = 0
            active = False
        elif word == "one" and (active or padded[i + 1] in UNITS):
            current, active = current + 1, True  # "twenty one", "one hour" (not "which one")
        elif word in ONES or word in TENS:
            current += ONES.get(word, 0) + TENS.get(word, 0)
            active = True
        elif word == "hundred":
            current, active = max(current, 1) * 100, True
        elif word in SCALES:
            total, current, active = total + max(current, 1) * SCALES[word], 0, True
        elif active:
            found.append((str(total + current), UNITS.get(word, "")))
            total = current = 0
            active = False
    return found


_RESTATED = re.compile(r" \((\d+)\)")


def without_restatements(text: str) -> str:
    """`text` less the digits that restate a spelled-out number in the legal style: "twelve
    (12) months" is twelve months, once (not "five 5-dollar bills", which are five)."""
    if "(" not in text:
        return text

    def drop(match: re.Match[str]) -> str:
        before = [w.strip(",;:") for w in text[: match.start()].casefold().split()[-4:]]
        spelled = [value for value, _ in number_words(before)[-1:]]
        if not spelled and before[-1:] == ["one"]:
            spelled = ["1"]  # "one (1) year": "one" is then counted with the unit after it
        return "" if spelled == [match[1]] else match[0]

    return _RESTATED.sub(drop, text)


def canonical_numbers(text: str) -> list[tuple[str, str]]:
    text, found = in_decimal_digits(text)
    timed, text = times_and_dates(text)
    found = timed + found
    for match in _NUMBER.finditer(text):
        num, unit, gap = match["num"], match["unit"] or "", match["gap"] or ""
        end = match.end()
        if not unit and end < len(text) and (text[end].isalnum() or text[end] == "_"):
            continue  # glued to letters: an identifier like 2fa or 0x8007, not a quantity
        canonical_unit = CURRENCY_SYMBOLS.get(unit) or UNITS.get(unit, "")
        if unit and not canonical_unit and not gap:
            continue
        canonical_unit = CURRENCY_SYMBOLS.get(match["cur"] or "", canonical_unit)
        if canonical_unit == "k" and "," not in num and num.count(".") <= 1:
            num, canonical_unit = _thousands(num), ""  # "10k" is 10,000
        if _THOUSANDS.fullmatch(num):
            num = num.replace(",", "")
        elif _DECIMAL_COMMA.fullmatch(num):
            num = num.replace(".", "").replace(",", ".")
        for part in num.split(","):
            if part.count(".") <= 1:
                whole, dot, frac = part.partition(".")
                part = (whole.lstrip("0") or "0") + dot + frac
            found.append(("-" + part if match["sign"] else part, canonical_unit))
    return found


def _thousands(num: str) -> str:
    """`num` (digits, perhaps one decimal point) times 1,000, written as digits."""
    whole, _, frac = num.partition(".")
    frac = (frac + "000")[:3] + frac[3:]
    digits = (whole + frac[:3]).lstrip("0") or "0"
    rest = frac[3:].rstrip("0")
    return f"{digits}.{rest}" if rest else digits
