"""The Llama 3.1 / 3.2 / 3.3 JSON tool-call format: `<|python_tag|>` (a special token, so often
gone from the decoded text) and then calls as JSON objects, `{"name": ..., "parameters":
{...}}` ("arguments" is accepted too), several separated by `;`.

After `<|python_tag|>` anywhere, the objects that follow are calls. Without it only an object
at the very start of the answer can be one, and only if it parses as a call naming one of the
request's functions with its arguments; any other JSON answer stays text. Whitespace and
separators between calls are markup; an object that is not a call, with the tag or separator
before it, is text, and so is the rest of the answer after text resumes.

A call whose name comes first streams: its header once the name (one of the tools) and the
arguments' `{` are read, then the arguments as they are written; the rest of the object
after them (its `}`, and any other members) is markup, as the whole call's reading ignores
them; anything else there is text. Other objects are read whole.
"""

from __future__ import annotations

from enum import Enum
from typing import Any

import orjson

from backends.tool_calls import exact_json
from backends.tool_calls.brackets import BROKEN, BracketScan
from backends.tool_calls.functions import ToolsLike
from backends.tool_calls.incremental import MarkupParser, Step, text_step, unfinished
from backends.tool_calls.json_header import object_head
from backends.tool_calls.markers import is_partial
from backends.tool_calls.parsed import ParsedCall

TAG = "<|python_tag|>"
_KEYS = ("parameters", "arguments")


class _Mode(Enum):
    START = "start"  # nothing but whitespace seen: a bare object may be a call
    TEXT = "text"
    AFTER_CALL = "after_call"  # a separator or another object may follow
    AFTER_ARGUMENTS = "after_arguments"  # a streamed call's object closes


class Llama3JsonParser(MarkupParser):
    """Incremental: text streams out until the tag; an object is released once it closes."""

    def __init__(self, tools: ToolsLike) -> None:
        super().__init__(tools)
        self._mode = _Mode.START
        self._scan = BracketScan()

    def _step(self, buffer: str, final: bool) -> Step | None:
        if self._mode is _Mode.TEXT:
            if buffer.startswith(TAG):
                return self._call_at(buffer, len(TAG), final)
            return text_step(buffer, (TAG,), final)
        space = len(buffer) - len(buffer.lstrip())
        if self._mode is _Mode.AFTER_ARGUMENTS:
            if space == len(buffer):
                return Step(space) if final or space else None
            if buffer[space] == "}":
                self._mode = _Mode.AFTER_CALL
                return Step(space + 1)
            self._mode = _Mode.TEXT  # the object did not close as a call's does: text resumes
            return Step(space)
        if self._mode is _Mode.AFTER_CALL:
            return self._after_call(buffer, space, final)
        if space == len(buffer):  # the start: nothing but whitespace yet
            return Step(space, buffer) if final else None
        if buffer[space] == "{":
            return self._call_at(buffer, space, final)  # which leaves START once decided
        self._mode = _Mode.TEXT
        return Step(0)

    def _after_call(self, buffer: str, space: int, final: bool) -> Step | None:
        if space == len(buffer):
            return Step(space) if final else None  # whitespace after the last call: markup
        rest = buffer[space:]
        if rest.startswith(";"):
            if final and not rest[1:].strip():
                return Step(len(buffer))  # a separator after the last call: markup
            return self._call_at(buffer, space + 1, final)
        if rest.startswith("{"):
            return self._call_at(buffer, space, final)
        if rest.startswith(TAG):
            return self._call_at(buffer, space + len(TAG), final)
        if is_partial(rest, TAG):
            return unfinished(buffer) if final else None
        self._mode = _Mode.TEXT
        return Step(space, buffer[:space])

    def _call_at(self, buffer: str, skip: int, final: bool) -> Step | None:
        """After `skip` characters of markup (a tag, a separator, whitespace), the object that
        follows as a call; or that markup, and the object if it closes, as text."""
        start = len(buffer) - len(buffer[skip:].lstrip())
        if start == len(buffer):
            return self._as_text(buffer, len(buffer), unfinished=True) if final else None
        if buffer[start] != "{":
            return self._as_text(buffer, skip)  # markup not followed by an object
        head = object_head(buffer, start, _KEYS)
        if head is not None and head[0] in self.functions:
            self._mode = _Mode.AFTER_ARGUMENTS
            return self._open_call(head[0], head[1], (), enclosed=True)
        end = self._scan.end(buffer, start, self._offset)
        if end is None:
            return self._as_text(buffer, len(buffer), unfinished=True) if final else None
        if end == BROKEN:
            return self._as_text(buffer, start + 1)
        call = self._call(buffer[start:end])
        if call is None:
            return self._as_text(buffer, end)
        self._mode = _Mode.AFTER_CALL
        return Step(end, calls=(call,))

    def _as_text(self, buffer: str, consumed: int, unfinished: bool = False) -> Step:
        self._mode = _Mode.TEXT
        return Step(consumed, buffer[:consumed], unfinished=unfinished)

    def _call(self, text: str) -> ParsedCall | None:
        try:
            value: Any = exact_json.loads(text)
        except orjson.JSONDecodeError:
            return None
        if not isinstance(value, dict):
            return None
        arguments = value.get("parameters", value.get("arguments"))
        return None if arguments is None else self.functions.call(value.get("name"), arguments)
