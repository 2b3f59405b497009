"""The Qwen3-Coder tool-call format: XML-like calls, one function per `<tool_call>` block,

    <tool_call>
    <function=get_weather>
    <parameter=city>
    Paris
    </parameter>
    </function>
    </tool_call>

Parameter values are text; each becomes the JSON type the function's schema declares for its
parameter (see `typed_values`). Like vLLM's parser, a `<function=...>` without the enclosing
`<tool_call>` tags is read too, and a parameter missing its `</parameter>` ends where the next
one (or the function) starts. A function missing `</function>` counts only once the answer
ends, and only if its last parameter was closed (a value cut by the token limit is not a
value). A block that is not well formed, or names no requested function, is text.
"""

from __future__ import annotations

import re
from typing import Any

from backends.tool_calls.incremental import MarkupParser, Step, text_step
from backends.tool_calls.parsed import ParsedCall
from backends.tool_calls.typed_values import typed_value

OPEN, CLOSE = "<tool_call>", "</tool_call>"
FUNCTION, FUNCTION_END = "<function=", "</function>"
PARAMETER_END = "</parameter>"
_PARAMETER = re.compile(r"<parameter=([^>\n]*)>")


class Qwen3CoderParser(MarkupParser):
    """Incremental: text streams out until `<tool_call>` or `<function=` (or a tail that may
    start one); each block is released whole when its closing tag arrives."""

    def _step(self, buffer: str, final: bool) -> Step | None:
        if buffer.startswith(OPEN):
            close, body_start = CLOSE, len(OPEN)
        elif buffer.startswith(FUNCTION):
            close, body_start = FUNCTION_END, 0
        else:
            return text_step(buffer, (OPEN, FUNCTION), final)
        end = buffer.find(close, body_start)
        if end < 0 and not final:
            return None
        consumed = len(buffer) if end < 0 else end + len(close)
        body = buffer[body_start : consumed if close == FUNCTION_END else end if end >= 0 else None]
        calls = self._calls(body)
        if not calls:
            return Step(consumed, buffer[:consumed], unfinished=end < 0)
        return Step(consumed, calls=calls)

    def _calls(self, body: str) -> tuple[ParsedCall, ...]:
        """The functions in a block, or () when any of them is not a good call."""
        calls: list[ParsedCall] = []
        pos = 0
        while pos < len(body):
            pos = len(body) - len(body[pos:].lstrip())
            if pos == len(body):
                break
            name_end = body.find(">", pos)
            if not body.startswith(FUNCTION, pos) or name_end < 0:
                return ()
            name = body[pos + len(FUNCTION) : name_end].strip()
            close = body.find(FUNCTION_END, name_end)
            inner_end = len(body) if close < 0 else close
            arguments = self._arguments(name, body[name_end + 1 : inner_end], closed=close >= 0)
            call = None if arguments is None else self.functions.call(name, arguments)
            if call is None:
                return ()
            calls.append(call)
            pos = len(body) if close < 0 else close + len(FUNCTION_END)
        return tuple(calls)

    def _arguments(self, function: str, inner: str, *, closed: bool) -> dict[str, Any] | None:
        arguments: dict[str, Any] = {}
        pos, last_closed = 0, True
        while (found := _PARAMETER.search(inner, pos)) is not None:
            if inner[pos : found.start()].strip():
                return None  # stray text between parameters
            name = found.group(1).strip()
            end = inner.find(PARAMETER_END, found.end())
            following = _PARAMETER.search(inner, found.end())
            if end >= 0 and (following is None or end < following.start()):
                value, pos, last_closed = inner[found.end() : end], end + len(PARAMETER_END), True
            else:
                value_end = len(inner) if following is None else following.start()
                value, pos, last_closed = inner[found.end() : value_end], value_end, False
            if not name or name in arguments:
                return None
            arguments[name] = typed_value(_trimmed(value), self.functions.parameter(function, name))
        if inner[pos:].strip() or (not closed and not (arguments and last_closed)):
            return None
        return arguments


def _trimmed(value: str) -> str:
    """The value without the line breaks that frame it (one on each side)."""
    value = value[1:] if value.startswith("\n") else value
    return value[:-1] if value.endswith("\n") else value
