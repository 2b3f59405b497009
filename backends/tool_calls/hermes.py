"""The Hermes / Qwen tool-call format: calls are JSON objects between `<tool_call>` and
`</tool_call>` tags, `{"name": ..., "arguments": {...}}`, after any text meant for the user.

Used by Hermes 2/3 and Qwen2.5/Qwen3 chat templates (the template's own instructions show the
tags). A block whose JSON does not parse, or that names no function among the request's tools,
is returned as text, as vLLM's hermes parser does, never as an invented call.
"""

from __future__ import annotations

from typing import Any

import orjson

from backends.tool_calls import exact_json
from backends.tool_calls.incremental import MarkupParser, Step, text_step
from backends.tool_calls.parsed import ParsedCall

OPEN, CLOSE = "<tool_call>", "</tool_call>"


class HermesParser(MarkupParser):
    """Incremental: the text before a call streams out at once, except a tail that may be the
    start of `<tool_call>`; each call is released whole once its closing tag arrives. At the
    end an unclosed block still counts if its JSON is a whole call (models may stop right
    after the object); else it is text, or dropped if the token limit cut it short."""

    def _step(self, buffer: str, final: bool) -> Step | None:
        if not buffer.startswith(OPEN):
            return text_step(buffer, (OPEN,), final)
        end = buffer.find(CLOSE, len(OPEN))
        if end < 0 and not final:
            return None  # a call in progress: wait for its end
        consumed = len(buffer) if end < 0 else end + len(CLOSE)
        call = self._call(buffer[len(OPEN) : end if end >= 0 else len(buffer)])
        if call is None:
            return Step(consumed, buffer[:consumed], unfinished=end < 0)
        return Step(consumed, calls=(call,))

    def _call(self, body: str) -> ParsedCall | None:
        try:
            value: Any = exact_json.loads(body.strip())
        except orjson.JSONDecodeError:
            return None
        if not isinstance(value, dict):
            return None
        return self.functions.call(value.get("name"), value.get("arguments", {}))
