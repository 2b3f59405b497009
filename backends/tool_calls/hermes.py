"""The Hermes / Qwen tool-call format: calls are JSON objects between `<tool_call>` and
`</tool_call>` tags, `{"name": ..., "arguments": {...}}`, after any text meant for the user.

Used by Hermes 2/3 and Qwen2.5/Qwen3 chat templates (the template's own instructions show the
tags). A call whose name comes first streams: its header once the name (one of the request's
tools) and the arguments' `{` are read, then the arguments as they are written (a
`</tool_call>` inside a JSON string is part of them); the rest of the object, and what follows
it up to `</tool_call>`, is markup. Any other block is read whole at `</tool_call>`: one whose
JSON does not parse, or that names no function among the request's tools, is returned as
text, as vLLM's hermes parser does, never as an invented call.
"""

from __future__ import annotations

from typing import Any

import orjson

from backends.tool_calls import exact_json
from backends.tool_calls.functions import ToolsLike
from backends.tool_calls.incremental import MarkupParser, Step, text_step
from backends.tool_calls.json_header import object_head
from backends.tool_calls.markers import first_marker, partial_length
from backends.tool_calls.parsed import ParsedCall

OPEN, CLOSE = "<tool_call>", "</tool_call>"
_KEYS = ("arguments",)


class HermesParser(MarkupParser):
    """Incremental: the text before a call streams out at once, except a tail that may be the
    start of `<tool_call>`; a call streams from its header on (see the module), or is released
    whole once its closing tag arrives. At the end an unclosed block still counts if its JSON
    is a whole call (models may stop right after the object); else it is text, or dropped if
    the token limit cut it short."""

    def __init__(self, tools: ToolsLike) -> None:
        super().__init__(tools)
        self._after_arguments = False  # a streamed call's arguments ended: its markup follows

    def _step(self, buffer: str, final: bool) -> Step | None:
        if self._after_arguments:
            return self._call_end(buffer, final)
        if not buffer.startswith(OPEN):
            return text_step(buffer, (OPEN,), final)
        head = object_head(buffer, len(OPEN), _KEYS)
        if head is not None and head[0] in self.functions:
            self._after_arguments = True
            return self._open_call(head[0], head[1], (CLOSE,), enclosed=True)
        end = buffer.find(CLOSE, len(OPEN))
        if end < 0 and not final:
            return None  # a call in progress: wait for its end
        consumed = len(buffer) if end < 0 else end + len(CLOSE)
        call = self._call(buffer[len(OPEN) : end if end >= 0 else len(buffer)])
        if call is None:
            return Step(consumed, buffer[:consumed], unfinished=end < 0)
        return Step(consumed, calls=(call,))

    def _call_end(self, buffer: str, final: bool) -> Step | None:
        """The markup after a streamed call's arguments, dropped up to `</tool_call>` (or a
        next `<tool_call>`, which it leaves in place)."""
        found = first_marker(buffer, (CLOSE, OPEN))
        if found is not None:
            self._after_arguments = False
            return Step(found[0] + (len(CLOSE) if found[1] == CLOSE else 0))
        if final:
            return Step(len(buffer))
        markup = len(buffer) - partial_length(buffer, (CLOSE, OPEN))
        return Step(markup) if markup else None

    def _call(self, body: str) -> ParsedCall | None:
        try:
            value: Any = exact_json.loads(body.strip())
        except orjson.JSONDecodeError:
            return None
        if not isinstance(value, dict):
            return None
        return self.functions.call(value.get("name"), value.get("arguments", {}))
