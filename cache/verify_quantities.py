"""The number check of the candidate verifier: two texts state the same quantities, whatever
way each writes them ("10%" / "ten percent", "90 minutes" / "1.5 hours", "the 1st floor" / "the
first floor", "2FA" / "two-factor authentication" holding no quantity)."""

from __future__ import annotations

from collections.abc import Sequence

from cache.verify_abbrev import expands_to
from cache.verify_features import Features
from cache.verify_numbers import NUMBER_VALUES
from cache.verify_units import in_base_units

_SAME_UNIT = frozenset({frozenset({"pound", "lb"}), frozenset({"pound", "gbp"})})
"""Units one spelling names on either side: "5 pound roast" weighs 5 lb, "5 pounds" may be £5."""


def same_numbers(a: Features, b: Features) -> bool:
    """`a` and `b` state the same quantities, in one unit or another, or in words."""
    if a.numbers == b.numbers or _same_values(a.numbers, b.numbers):
        return True
    converted = in_base_units(a.numbers)
    if converted is not None and converted == in_base_units(b.numbers):
        return True  # "a 5-second timeout" / "a 5000 ms timeout"
    return _spelled_out(a, b) == _spelled_out(b, a)


def _same_values(a: Sequence[tuple[str, str]], b: Sequence[tuple[str, str]]) -> bool:
    """The same values, their units the same or possibly the same (`_SAME_UNIT`)."""
    return len(a) == len(b) and all(
        x == y or (x[0] == y[0] and frozenset((x[1], y[1])) in _SAME_UNIT)
        for x, y in zip(a, b, strict=True)
    )


_WORD_FORMS = {("1", "ord"): "first", ("2", "ord"): "second", ("1", ""): "one"}
"""Numbers the extractor leaves uncounted when spelled out ("first, log in", "wait a second",
"which one"), that another text writes in digits ("the 1st floor", "1 bitcoin")."""


def _spelled_out(a: Features, b: Features) -> list[tuple[str, str]]:
    """`a`'s numbers less those `b` writes as words it does not count: the number words inside
    an expansion of one of `b`'s initialisms (the "two" of "two-factor authentication" is the 2
    of "2FA", not a quantity), and "first", "second" or "one" for a 1st, 2nd or 1."""
    numbers = list(a.numbers)
    for entity in b.entities:
        span = expands_to(entity, a.seq) if any(c.isdigit() for c in entity) else None
        if span is not None:
            for word in a.seq[span[0] : span[1]]:
                value = (str(NUMBER_VALUES[word]), "") if word in NUMBER_VALUES else None
                if value in numbers:
                    numbers.remove(value)
    for value, word in _WORD_FORMS.items():
        if value in numbers and value not in b.numbers and word in b.words:
            numbers.remove(value)
    return numbers
