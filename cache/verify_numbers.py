"""Quantities in text for the candidate verifier: digits with separators, signs, currencies
and units, and spelled-out numbers, each normalized to (value, canonical unit)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from decimal import Decimal, InvalidOperation

from cache.verify_dates import times_and_dates

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

# Unit spellings -> canonical unit. Currency symbols are handled by the number pattern.
UNITS: dict[str, str] = {}
for _canonical, _spellings in {
    "%": "% percent pct percentage",
    "usd": "usd dollar dollars bucks",
    "eur": "eur euro euros",
    "gbp": "gbp",
    "jpy": "jpy yen",
    "inr": "inr rupee rupees",
    "pound": "pound pounds",
    "ms": "ms millisecond milliseconds",
    "s": "s sec secs second seconds",
    "min": "min mins minute minutes",
    "h": "h hr hrs hour hours",
    "d": "day days",
    "wk": "wk week weeks",
    "mo": "month months",
    "y": "yr yrs year years",
    "b": "b byte bytes",
    "kb": "kb kib kilobyte kilobytes",
    "mb": "mb mib megabyte megabytes",
    "gb": "gb gib gigabyte gigabytes",
    "tb": "tb tib terabyte terabytes",
    "mm": "mm millimeter millimeters millimetre millimetres",
    "cm": "cm centimeter centimeters centimetre centimetres",
    "m": "m meter meters metre metres",
    "km": "km kilometer kilometers kilometre kilometres",
    "mi": "mi mile miles",
    "ft": "ft foot feet",
    "in": "inch inches",
    "mg": "mg milligram milligrams",
    "g": "g gram grams",
    "kg": "kg kilo kilos kilogram kilograms",
    "lb": "lb lbs",
    "oz": "oz ounce ounces",
    "t": "ton tons tonne tonnes",
    "c": "°c celsius",
    "f": "°f fahrenheit",
    "deg": "° degree degrees",
    "am": "am a.m.",
    "pm": "pm p.m.",
    "ord": "st nd rd th",
    "x": "x times",
    "px": "px pixel pixels",
    "fps": "fps",
    "hz": "hz",
    "khz": "khz",
    "mhz": "mhz",
    "ghz": "ghz",
    "mph": "mph",
    "kph": "kph km/h",
    "w": "w watt watts",
    "kw": "kw",
    "kwh": "kwh",
    "v": "v volt volts",
    "mah": "mah",
    "k": "k",
}.items():
    for _spelling in _spellings.split():
        UNITS[_spelling] = _canonical

CURRENCY_SYMBOLS = {"$": "usd", "€": "eur", "£": "gbp", "¥": "jpy", "₹": "inr"}

_MULTIPLES = frozenset({"twice", "thrice"})
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
CLOCK_WORDS = {"noon": "12:00", "midnight": "00:00"}
NUMBER_WORDS = (
    frozenset(ONES)
    | frozenset(TENS)
    | frozenset(SCALES)
    | frozenset(ORDINALS)
    | frozenset(CLOCK_WORDS)
)
NUMBER_VALUES = {**ONES, **TENS}

_NUMBER = re.compile(
    r"(?<![\w.])(?:(?P<cur>[$€£¥₹])\s?)?(?P<sign>[-−])?(?P<num>\d+(?:[.,]\d+)*)"
    r"(?:(?P<gap>[ \-]?)(?P<unit>%|°[cf]?|[$€£¥₹]|[a-zµ]+(?:/[a-z]+)?)(?!\w))?"
)
_THOUSANDS = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?")
_GLUED = re.compile(r"\d+(?:\.\d+)?([a-z%°]+)")


_IN_BASE = {
    "ms": ("s", Decimal("0.001")),
    "min": ("s", Decimal(60)),
    "h": ("s", Decimal(3600)),
    "d": ("s", Decimal(86400)),
    "wk": ("s", Decimal(604800)),
    "mm": ("m", Decimal("0.001")),
    "cm": ("m", Decimal("0.01")),
    "km": ("m", Decimal(1000)),
    "mg": ("g", Decimal("0.001")),
    "kg": ("g", Decimal(1000)),
}
"""Units with one exact ratio to a base unit (not months, years or bytes: their lengths vary
or are read two ways)."""
_BASES = frozenset(base for base, _ in _IN_BASE.values())
_ONE = Decimal(1)


def in_base_units(numbers: Sequence[tuple[str, str]]) -> list[tuple[Decimal | str, str]] | None:
    """`numbers` with lengths of time, distance and mass in one unit each, sorted: "5
    seconds" and "5000 ms" alike, "90 minutes" and "1.5 hours". None when two of them would
    share a unit: "5 min and 60 s" / "1 min and 300 s" hold the same values in other roles."""
    converted: list[tuple[Decimal | str, str]] = []
    for value, unit in numbers:
        base, factor = _IN_BASE.get(unit, (unit, _ONE))
        try:
            amount = Decimal(value) * factor if base in _BASES else None
        except InvalidOperation:
            amount = None  # "1.2.3"
        # Values in no such unit keep their spelling: "1.10" is not "1.1" when it is a version.
        converted.append((value, unit) if amount is None else (amount.normalize(), base))
    bases = [unit for value, unit in converted if unit in _BASES]
    if len(bases) != len(set(bases)):
        return None
    return sorted(converted, key=lambda pair: (str(pair[0]), pair[1]))


def is_quantity(word: str) -> bool:
    """A lowercase token such as "16gb", "7pm" or "1st": digits glued to a known unit."""
    glued = _GLUED.fullmatch(word)
    return glued is not None and glued.group(1) in UNITS


def counts(before: str, word: str) -> bool:
    """`word` is the unit of the number `before` ("10 percent", "ten percent", "one hour"):
    compared, with its number, by the number check."""
    if word not in UNITS:
        return False
    return before.isdigit() or before in NUMBER_WORDS or before == "one" or is_quantity(before)


def number_words(words: list[str]) -> list[tuple[str, str]]:
    """Spelled-out quantities ("thirty", "twenty five", "two hundred") and the unit after them."""
    found: list[tuple[str, str]] = []
    total = current = 0
    active = False
    padded = [*words, ""]
    for i, word in enumerate(padded):
        if word in CLOCK_WORDS:
            found.append((CLOCK_WORDS[word], "clock"))  # "noon" is 12pm is 12:00
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
        spelled = number_words(before)
        return "" if spelled and spelled[-1][0] == match[1] else match[0]

    return _RESTATED.sub(drop, text)


def canonical_numbers(text: str) -> list[tuple[str, str]]:
    found, text = times_and_dates(text)
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
