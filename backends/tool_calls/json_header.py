"""The head of a call written as one JSON object, `{"name": "get_weather", "arguments": {`:
read before the object is whole, so the call can stream from its arguments' first `{`."""

from __future__ import annotations

import re
from collections.abc import Container

LIMIT = 256
"""Characters, from where the object may start, within which the head must be whole; past
them (a name after the arguments, arguments given as a string) the call is read whole."""

_HEAD = re.compile(
    r'\s*\{\s*"name"\s*:\s*"([^"\\\x00-\x1f]*)"\s*,\s*"(arguments|parameters)"\s*:\s*(?=\{)'
)


def object_head(text: str, start: int, keys: Container[str]) -> tuple[str, int] | None:
    """The function's name and where its arguments object starts, if `text` from `start`
    (whitespace first allowed) opens a call object with its name first and then one of
    `keys`; None while it does not (yet)."""
    found = _HEAD.match(text, start, min(len(text), start + LIMIT))
    if found is None or found.group(2) not in keys:
        return None
    return found.group(1), found.end()
