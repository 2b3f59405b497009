"""Clock times and calendar dates in text, for the verifier's number check: "9am", "9:00
a.m." and "21:00" as HH:MM; "March 3rd", "3 March", "2024-03-03" and "7/19" as MM-DD."""

from __future__ import annotations

import re
from collections.abc import Iterator

MONTHS = {
    name: number
    for number, names in enumerate(
        (
            "january jan",
            "february feb",
            "march mar",
            "april apr",
            "may",
            "june jun",
            "july jul",
            "august aug",
            "september sep sept",
            "october oct",
            "november nov",
            "december dec",
        ),
        start=1,
    )
    for name in names.split()
}
_MONTH = "|".join(sorted(MONTHS, key=len, reverse=True))
_DAY = r"(?:the\s+)?(?P<{0}>[0-3]?\d)(?:st|nd|rd|th)?"
_CLOCK = re.compile(
    r"(?<![\w.:/])(?P<h>1[0-2]|0?[1-9])(?:[:.](?P<m>[0-5]\d))?\s?(?P<mer>am|pm)(?!\w)"
    r"|(?<![\w.:/])(?P<h24>[01]?\d|2[0-3]):(?P<m24>[0-5]\d)(?![\w:])"
)
_DATE = re.compile(
    rf"(?<!\w)(?:(?P<m1>{_MONTH})\.?\s+{_DAY.format('d1')}|{_DAY.format('d2')}\s+(?:of\s+)?"
    rf"(?P<m2>{_MONTH}))(?!\w)"
    r"|(?<![\w-])(?P<y>\d{4})-(?P<mo>0[1-9]|1[0-2])-(?P<d>[0-3]\d)(?![\w-])"
)
_SLASHED = re.compile(r"(\d{1,2})/(\d{1,2})(?:/(\d{4}|\d{2}))?(?![\w/]|[.,]\d)")
"""A date written with slashes: "7/19", "19/7/2024", matched only where a slash is (see
`_slashed`)."""
_IDIOMS = frozenset({"24/7"})
_CUES = frozenset(
    "on by due until till before after from since dated date deadline mon monday tue tues "
    "tuesday wed weds wednesday thu thur thurs thursday fri friday sat saturday sun sunday".split()
)
"""Words after which a slashed pair is a date ("due Fri 7/19"), not a fraction ("5/16 inch")."""
_FOLLOWERS = frozenset("at and or to through thru until till is was will".split())
"""Words that may follow a date; any other word ("5/16 of", "5/15 mg") makes it a quantity."""
_PREVIOUS_WORD = re.compile(r"(\w+)\W*$")
_NEXT_WORD = re.compile(r"[\s-]*([a-z]+)")


def times_and_dates(text: str) -> tuple[list[tuple[str, str]], str]:
    """Clock times ("9am", "9:00 a.m.", "21:00" as HH:MM) and dates ("march 3rd", "3 march",
    "2024-03-03" as MM-DD, its year a number of its own), and `text` with them blanked out.
    A bare "7:30" is read as written (07:30): it matches "7:30am", not "7:30pm". `text` is
    lowercase (the verifier's features read the casefolded text)."""
    found: list[tuple[str, str]] = []
    spans: list[tuple[int, int]] = []
    for match in _CLOCK.finditer(text):
        if match["mer"]:
            hour = int(match["h"]) % 12 + (12 if match["mer"] == "pm" else 0)
            minute = int(match["m"] or 0)
        else:
            hour, minute = int(match["h24"]), int(match["m24"])
        found.append((f"{hour:02d}:{minute:02d}", "clock"))
        spans.append(match.span())
    for match in _DATE.finditer(text):
        if match["y"]:
            month, day = int(match["mo"]), int(match["d"])
            found.append((match["y"], ""))
        else:
            month = MONTHS[match["m1"] or match["m2"]]
            day = int(match["d1"] or match["d2"])
        if 1 <= day <= 31:
            found.append((f"{month:02d}-{day:02d}", "date"))
            spans.append(match.span())
    for match in _slashed(text):
        day_month = _unambiguous(int(match[1]), int(match[2]))
        if day_month is not None and match[0] not in _IDIOMS:
            found.append((f"{day_month[1]:02d}-{day_month[0]:02d}", "date"))
            if match[3]:
                found.append((match[3] if len(match[3]) == 4 else "20" + match[3], ""))
            spans.append(match.span())
    if not spans:
        return found, text
    chars = list(text)
    for start, end in spans:
        chars[start:end] = " " * (end - start)
    return found, "".join(chars)


def _slashed(text: str) -> Iterator[re.Match[str]]:
    """The slashed dates of `text` (see `_dated`), found from its slashes: a pattern tried at
    every position of a long prompt cost more than all the other date patterns together."""
    slash = text.find("/", 1)
    while slash != -1:
        start = slash - 2 if slash >= 2 and text[slash - 2].isdigit() else slash - 1
        before = text[start - 1] if start > 0 else " "
        match = _SLASHED.match(text, start) if text[start].isdigit() else None
        if match is not None and not (before.isalnum() or before in "_/.,") and _dated(text, match):
            yield match
            slash = text.find("/", match.end())
        else:
            slash = text.find("/", slash + 1)


def _dated(text: str, match: re.Match[str]) -> bool:
    """A slashed pair reads as a date with a year ("7/19/2024"), or after a word that names a
    day ("due", "on", "Fri") and before no word but a joining one ("7/19 at noon"): a fraction
    is as often written the same way ("Give 5/15 mg", "5/16 of an inch")."""
    following = _NEXT_WORD.match(text, match.end())
    if following is not None and following[1] not in _FOLLOWERS:
        return False
    if match[3]:
        return True
    previous = _PREVIOUS_WORD.search(text, max(0, match.start() - 24), match.start())
    return previous is not None and previous[1] in _CUES


def _unambiguous(first: int, second: int) -> tuple[int, int] | None:
    """(day, month) of a slashed date that reads one way only: "7/19" (July 19, US order) and
    "19/7" (the 19th of July). "7/6" may be either, and "3/4" a fraction: left as numbers."""
    if 1 <= first <= 12 < second <= 31:
        return second, first
    if 1 <= second <= 12 < first <= 31:
        return first, second
    return None
