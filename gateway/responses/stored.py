"""A stored response as the store keeps it: the response object and the conversation that
led to it (the items it answered, then its output), as JSON.

The store is a Redis others can write to: a value that does not decode, or lacks the shape
written here (another program's key, a corrupt or truncated value), is no stored response.
It reads as absent (a 404, as for an id never stored), with one warning; never a 500, and
never served as it is.
"""

from __future__ import annotations

import logging
from typing import Any

import orjson

log = logging.getLogger("gateway.responses")


def encode(response: dict[str, Any], items: list[dict[str, Any]]) -> bytes:
    """The stored value of a final response that answered `items`."""
    return orjson.dumps({"response": response, "items": [*items, *response["output"]]})


def decode(raw: bytes, response_id: str) -> dict[str, Any] | None:
    """The stored response `{"response", "items"}` under `response_id`, or None (logged)
    when the value is not one this gateway wrote."""
    try:
        stored = orjson.loads(raw)
    except orjson.JSONDecodeError:
        problem: str | None = "not JSON"
    else:
        problem = _shape_problem(stored, response_id)
    if problem is not None:
        log.warning(
            "stored response %s is unreadable (%s): treated as not found", response_id, problem
        )
        return None
    checked: dict[str, Any] = stored
    return checked


def _shape_problem(stored: Any, response_id: str) -> str | None:
    if not isinstance(stored, dict):
        return "not an object"
    response, items = stored.get("response"), stored.get("items")
    if not isinstance(response, dict) or response.get("object") != "response":
        return "no response object"
    if response.get("id") != response_id:
        return "the response has another id"
    output = response.get("output")
    if not isinstance(output, list) or not all(isinstance(item, dict) for item in output):
        return "no output list"
    if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
        return "no item list"
    if len(items) < len(output):
        return "fewer items than output"
    return None
