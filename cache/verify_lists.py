"""Numbered lists for the candidate verifier: the markers of a list ("Rules: 1. ... 2. ...")
number its items, they are not quantities to compare."""

from __future__ import annotations

import re

_MIN_ITEM_WORDS = 3
_MARKER = re.compile(r"(?:^|(?<=[\n:;.!?]))[ \t]*(\d{1,2})[.)][ \t]+(?=[^\W\d_])", re.MULTILINE)


def without_list_markers(text: str) -> str:
    """`text` less the numbers of a numbered list ("Rules: 1. Be brief. 2. Cite the source."):
    markers 1, 2, ... in order, each opening a line, or following a sentence's end and opening
    an item of 3 words or more. A lone "3." after a colon ("Total: 3. Next") and counts after
    labels ("Children: 1. Adults: 2.") are quantities, and stay."""
    if "1." not in text and "1)" not in text:
        return text
    markers = [m for m in _MARKER.finditer(text) if m[1] != "0"]
    listed, expected = [], 1
    for marker in markers:
        if int(marker[1]) == expected:
            listed.append(marker)
            expected += 1
    ends = [m.start() for m in listed[1:]] + [len(text)]
    if len(listed) < 2 or not all(map(_opens_item, listed, ends)):
        return text
    parts, start = [], 0
    for marker in listed:
        parts.append(text[start : marker.start(1)])
        start = marker.end(1) + 1
    return "".join(parts) + text[start:]


def _opens_item(marker: re.Match[str], end: int) -> bool:
    at_line_start = marker.start() == 0 or marker.string[marker.start() - 1] == "\n"
    return at_line_start or len(marker.string[marker.end() : end].split()) >= _MIN_ITEM_WORDS
