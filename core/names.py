"""The names a client gives that a model or a client reads back (a function's, a structured
output format's): OpenAI's pattern, 1 to 64 letters, digits, `_` or `-`, checked alike
wherever one comes in, in OpenAI's words."""

from __future__ import annotations

import re

from core.errors import InvalidRequest, StringTooLong

MAX_LENGTH = 64
_PATTERN = re.compile(r"[a-zA-Z0-9_-]+")


def check_name(name: str, param: str) -> None:
    """A 400 naming `param` unless `name` is 1 to 64 letters, digits, underscores or dashes:
    `invalid_value` for another character (or none), `string_above_max_length` when longer."""
    if not _PATTERN.fullmatch(name):
        raise InvalidRequest(
            f"Invalid '{param}': string does not match pattern. Expected a string that "
            "matches the pattern '^[a-zA-Z0-9_-]+$'.",
            param=param,
        )
    if len(name) > MAX_LENGTH:
        raise StringTooLong(param, len(name), MAX_LENGTH)
