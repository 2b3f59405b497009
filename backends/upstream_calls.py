"""Tool calls as an OpenAI-compatible upstream sent them, in the shape OpenAI's clients read.

Servers that call themselves OpenAI-compatible send calls that the official client cannot
take: no `index` on a streamed fragment (its stream helper raises), the id and name repeated
in every fragment (the helper joins them: `call_acall_a`, `get_weatherget_weather`), explicit
nulls in continuations (the helper asserts on them), no call id at all (the answer cannot be
sent back: a tool message must name the call), or `arguments` as a JSON object rather than
the string the API promises (a client's `json.loads` fails on it, and the Responses stream,
which joins the fragments, broke off). So every call is made canonical here, once, for every
path after it: a streamed call's first fragment carries its `index`, `id`, `type` and `name`
with the first arguments, later ones only `index` and more `arguments`; a whole answer's call
has all four; `arguments` is always a string; a missing id is made up (`call_` and 24 hex
digits, as OpenAI's look)."""

from __future__ import annotations

import secrets
from typing import Any

import orjson


def made_up_id() -> str:
    return f"call_{secrets.token_hex(12)}"


def arguments_text(value: Any) -> str:
    """A call's arguments as the string the API promises: a string as it is, nothing as "",
    any other JSON value as its compact JSON."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return orjson.dumps(value).decode()


def whole_calls(calls: Any) -> list[dict[str, Any]] | None:
    """A whole answer's calls, each with its `id`, `type` and `function` name and arguments
    (None when there are none)."""
    if not isinstance(calls, list):
        return None
    whole = []
    for call in calls:
        if not isinstance(call, dict):
            continue
        function = call.get("function")
        function = function if isinstance(function, dict) else {}
        whole.append(
            {
                "id": _given(call.get("id")) or made_up_id(),
                "type": "function",
                "function": {
                    "name": _given(function.get("name")) or "",
                    "arguments": arguments_text(function.get("arguments")),
                },
            }
        )
    return whole or None


class CallFragments:
    """The streamed calls of one answer so far, per choice: which call each fragment belongs
    to, and whether its head was already passed on."""

    __slots__ = ("_calls",)

    def __init__(self) -> None:
        # Per choice: the index of each call started, by its id (its made-up one if none),
        # and the order they started in.
        self._calls: dict[int, _Calls] = {}

    def fragments(self, choice: int, calls: Any) -> list[dict[str, Any]] | None:
        """A streamed delta's call fragments made canonical (None when nothing is left)."""
        if not isinstance(calls, list):
            return None
        known = self._calls.get(choice)
        if known is None:
            known = self._calls[choice] = _Calls()
        canonical = []
        for call in calls:
            if isinstance(call, dict) and (fragment := known.fragment(call)) is not None:
                canonical.append(fragment)
        return canonical or None


class _Calls:
    """One choice's calls: which indexes started, by id and name, and the last one (a
    fragment that names no index continues it)."""

    __slots__ = ("_by_id", "_last", "_names")

    def __init__(self) -> None:
        self._names: dict[int, str] = {}  # the calls started, by index
        self._by_id: dict[str, int] = {}
        self._last: int | None = None

    def fragment(self, call: dict[str, Any]) -> dict[str, Any] | None:
        function = call.get("function")
        function = function if isinstance(function, dict) else {}
        given_id, name = _given(call.get("id")), _given(function.get("name"))
        index = call.get("index")
        if not isinstance(index, int) or isinstance(index, bool):
            index = self._index_of(given_id, name)
        arguments = arguments_text(function.get("arguments"))
        self._last = index
        if index in self._names:
            if not arguments:
                return None
            return {"index": index, "function": {"arguments": arguments}}
        self._names[index] = name or ""
        call_id = given_id or made_up_id()
        self._by_id[call_id] = index
        head = {"name": name or "", "arguments": arguments}
        return {"index": index, "id": call_id, "type": "function", "function": head}

    def _index_of(self, given_id: str | None, name: str | None) -> int:
        """The index of a fragment that names none: its id's call, or a new one for an id
        not seen; without an id, the last call unless it names another function."""
        last = self._last
        if given_id is not None:
            known = self._by_id.get(given_id)
            return known if known is not None else len(self._names)
        if last is None or (name is not None and name != self._names.get(last)):
            return len(self._names)
        return last


def _given(value: Any) -> str | None:
    """A string field's value, or None for a missing, null, empty or non-string one."""
    return value if isinstance(value, str) and value else None
