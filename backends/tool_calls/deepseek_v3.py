"""DeepSeek V3 / R1's tool-call markup (its tokens spelt with fullwidth ｜ and ▁):

    <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather
    ```json
    {"city": "Paris"}
    ```<｜tool▁call▁end｜><｜tool▁call▁begin｜>...<｜tool▁call▁end｜><｜tool▁calls▁end｜>

V3.1's shorter call is read too (what follows the separator tells them apart):
`<｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city": "Paris"}<｜tool▁call▁end｜>`.

Each call is released when its end token arrives. A call that does not parse, or names no
requested function, is text; the section's own tokens (and the whitespace between calls) are
markup unless nothing in the section was a call, in which case all of it is text, as written.
At the end of the answer a call missing its end token still counts if its JSON is whole.
"""

from __future__ import annotations

from typing import Any

import orjson

from backends.tool_calls import exact_json
from backends.tool_calls.functions import ToolsLike
from backends.tool_calls.incremental import MarkupParser, Step, text_step, unfinished
from backends.tool_calls.markers import is_partial
from backends.tool_calls.parsed import ParsedCall

CALLS_BEGIN, CALLS_END = "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"
CALL_BEGIN, CALL_END = "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>"
SEP = "<｜tool▁sep｜>"
FENCE = "```"


class DeepSeekV3Parser(MarkupParser):
    """Incremental: text streams out until a calls (or call) begin token, or a tail that may
    start one; then each call leaves whole, and text resumes after the section."""

    def __init__(self, tools: ToolsLike) -> None:
        super().__init__(tools)
        self._in_section = False
        self._section_calls = 0  # calls made in the current section

    def _step(self, buffer: str, final: bool) -> Step | None:
        if self._in_section:
            return self._section_step(buffer, final)
        if buffer.startswith(CALLS_BEGIN):
            start = len(buffer) - len(buffer[len(CALLS_BEGIN) :].lstrip())
            rest = buffer[start:]
            if not rest or is_partial(rest, CALL_BEGIN):
                return unfinished(buffer) if final else None
            if not rest.startswith(CALL_BEGIN):
                return Step(len(CALLS_BEGIN), CALLS_BEGIN)
            return self._call_at(buffer, start, final)
        if buffer.startswith(CALL_BEGIN):
            return self._call_at(buffer, 0, final)
        return text_step(buffer, (CALLS_BEGIN, CALL_BEGIN), final)

    def _section_step(self, buffer: str, final: bool) -> Step | None:
        start = len(buffer) - len(buffer.lstrip())
        rest = buffer[start:]
        if rest.startswith(CALL_BEGIN):
            return self._call_at(buffer, start, final)
        if rest.startswith(CALLS_END):
            return self._leave(buffer, start + len(CALLS_END))
        if not rest:  # whitespace at the end of an unclosed section
            return self._leave(buffer, start) if final else None
        if is_partial(rest, CALL_BEGIN) or is_partial(rest, CALLS_END):
            if not final:
                return None
            self._in_section = False
            return unfinished(buffer)
        self._in_section = False
        return Step(0)  # text resumes; the whitespace before it is text too

    def _leave(self, buffer: str, consumed: int) -> Step:
        self._in_section = False
        return Step(consumed, "" if self._section_calls else buffer[:consumed])

    def _call_at(self, buffer: str, start: int, final: bool) -> Step | None:
        """The call whose begin token is at `start`, with the markup before it."""
        end = buffer.find(CALL_END, start)
        if end < 0 and not final:
            return None
        consumed = len(buffer) if end < 0 else end + len(CALL_END)
        call = self._call(buffer[start + len(CALL_BEGIN) : end if end >= 0 else None])
        first = not self._in_section
        self._in_section = True
        if first:
            self._section_calls = 0
        if call is None:
            return Step(consumed, buffer[:consumed], unfinished=end < 0)
        self._section_calls += 1
        return Step(consumed, calls=(call,))

    def _call(self, body: str) -> ParsedCall | None:
        head, sep, tail = body.partition(SEP)
        if not sep:
            return None
        if tail.lstrip().startswith("{"):  # V3.1: the name before the separator
            name, arguments = head.strip(), tail.strip()
        else:
            name, _, arguments = tail.partition("\n")
            name, arguments = name.strip(), _unfenced(arguments.strip())
            if head.strip() != "function":
                return None
        try:
            value: Any = exact_json.loads(arguments)
        except orjson.JSONDecodeError:
            return None
        return self.functions.call(name, value) if isinstance(value, dict) else None


def _unfenced(text: str) -> str:
    """The JSON inside a ```json fence (the closing fence may be missing at the end)."""
    if text.startswith(FENCE):
        text = text.partition("\n")[2]
    return text[: -len(FENCE)] if text.endswith(FENCE) else text
