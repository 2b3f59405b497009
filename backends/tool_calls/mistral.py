"""Mistral's tool-call formats, both after the `[TOOL_CALLS]` token:

- older models (tokenizer v3, Mistral 7B v0.3, Mixtral): a JSON array of calls,
  `[TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Paris"}}, ...]`;
- newer ones (tokenizer v11+, Mistral Small 3.2, Magistral, Devstral): one token per call,
  `[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}[TOOL_CALLS]search[ARGS]{...}`, where a
  `[CALL_ID]id` may sit between the name and `[ARGS]` (the id is not kept: the gateway makes
  its own).

`[TOOL_CALLS]` is a special token: the text reaches this parser only if the engine does not
skip special tokens. A named call of one of the request's tools streams: its header once its
arguments' `{` is read, then the arguments as they are written (what follows them is read as
after any call). An array is read whole: all calls or all text. A call that does not parse, or
names no requested function, is text, the token with it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import orjson

from backends.tool_calls import exact_json
from backends.tool_calls.brackets import BROKEN, BracketScan
from backends.tool_calls.functions import ToolsLike
from backends.tool_calls.incremental import MarkupParser, Step, text_step, unfinished
from backends.tool_calls.markers import is_partial
from backends.tool_calls.parsed import ParsedCall

TOOL_CALLS, ARGS, CALL_ID = "[TOOL_CALLS]", "[ARGS]", "[CALL_ID]"
_NAME = re.compile(r"[\w.\-]+")
_ID = re.compile(r"\w+")
_Reader = Callable[[Any], tuple[ParsedCall, ...]]


class MistralParser(MarkupParser):
    """Incremental: text streams out until `[TOOL_CALLS]` (or a tail that may start it); a
    named call streams, an array is released once its JSON closes."""

    def __init__(self, tools: ToolsLike) -> None:
        super().__init__(tools)
        self._scan = BracketScan()

    def _step(self, buffer: str, final: bool) -> Step | None:
        if not buffer.startswith(TOOL_CALLS):
            return text_step(buffer, (TOOL_CALLS,), final)
        start = len(buffer) - len(buffer[len(TOOL_CALLS) :].lstrip())
        if start == len(buffer):
            return unfinished(buffer) if final else None
        if buffer[start] == "[":
            return self._json_at(buffer, start, final, self._array)
        name = _NAME.match(buffer, start)
        if name is None:
            return Step(len(TOOL_CALLS), TOOL_CALLS)
        args = self._args_start(buffer, name.end())
        if args is None:
            return unfinished(buffer) if final else None
        if args < 0:
            return Step(len(TOOL_CALLS), TOOL_CALLS)
        if name.group() in self.functions:
            return self._open_call(name.group(), args, (TOOL_CALLS,))
        return self._json_at(buffer, args, final, lambda value: self._named(name.group(), value))

    def _args_start(self, buffer: str, pos: int) -> int | None:
        """Where the arguments object should start after a call's name: past an optional
        `[CALL_ID]id` and `[ARGS]`; None while the buffer ends before it is known, -1 when
        what follows the name is none of these."""
        rest = buffer[pos:]
        if rest.startswith(CALL_ID):
            call_id = _ID.match(buffer, pos + len(CALL_ID))
            pos = call_id.end() if call_id else pos + len(CALL_ID)
            rest = buffer[pos:]
        if rest.startswith(ARGS):
            pos += len(ARGS)
            rest = buffer[pos:]
        elif not rest or is_partial(rest, ARGS) or is_partial(rest, CALL_ID):
            return None
        return None if pos == len(buffer) else pos if rest.startswith("{") else -1

    def _json_at(self, buffer: str, start: int, final: bool, read: _Reader) -> Step | None:
        """The JSON value at `start` read as calls, or the markup up to its end as text."""
        end = self._scan.end(buffer, start, self._offset)
        if end is None:
            return unfinished(buffer) if final else None
        if end == BROKEN:
            return Step(start + 1, buffer[: start + 1])
        try:
            calls: tuple[ParsedCall, ...] = read(exact_json.loads(buffer[start:end]))
        except orjson.JSONDecodeError:
            calls = ()
        return Step(end, calls=calls) if calls else Step(end, buffer[:end])

    def _array(self, value: Any) -> tuple[ParsedCall, ...]:
        if not isinstance(value, list):
            return ()
        calls = [
            self.functions.call(item.get("name"), item.get("arguments", {}))
            if isinstance(item, dict)
            else None
            for item in value
        ]
        return tuple(c for c in calls if c is not None) if None not in calls else ()

    def _named(self, name: str, value: Any) -> tuple[ParsedCall, ...]:
        call = self.functions.call(name, value)
        return (call,) if call else ()
