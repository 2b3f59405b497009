"""JSON read without changing its numbers: orjson turns an integer beyond 64 bits into a float
(`123456789012345678901234567890` would come back as `1.2345678901234568e+29`), so text that
may hold one is read again by the standard library, which keeps every integer exact."""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

# 19 digits in a row: where an integer may not fit orjson's 64 bits (-2**63 .. 2**64 - 1).
_LONG_DIGITS = re.compile(r"\d{19}")


def loads(text: str | bytes) -> Any:
    """`text` parsed as strict JSON (orjson.JSONDecodeError if it is not), integers exact."""
    value = orjson.loads(text)
    if _LONG_DIGITS.search(text if isinstance(text, str) else text.decode()) is None:
        return value
    return json.loads(text)  # valid JSON, as orjson just found: only the numbers differ
