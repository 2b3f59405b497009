"""Units of measure for the candidate verifier: their spellings, and lengths of time, distance
and mass in one base unit each."""

from __future__ import annotations

import re
from collections.abc import Sequence
from decimal import Decimal, InvalidOperation

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
