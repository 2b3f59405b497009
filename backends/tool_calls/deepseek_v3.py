"""DeepSeek V3 / R1's tool-call markup (its tokens spelt with fullwidth ｜ and ▁):

    <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather
    ```json
    {"city": "Paris"}
    ```<｜tool▁call▁end｜><｜tool▁call▁begin｜>...<｜tool▁call▁end｜><｜tool▁calls▁end｜>

V3.1's shorter call is read too (what follows the separator tells them apart):
`<｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city": "Paris"}<｜tool▁call▁end｜>`.

A call of one of the request's tools streams: its header once its arguments' `{` is read,
then the arguments as they are written; what follows them up to the call's end token is
markup. Any other call is read whole when its end token arrives: one that does not parse, or
names no requested function, is text; the section's own tokens (and the whitespace between
calls) are markup unless nothing in the section was a call, in which case all of it is text,
as written.
At the end of the answer a call missing its end token still counts if its JSON is whole.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from backends.tool_calls import exact_json
from backends.tool_calls.functions import ToolsLike
from backends.tool_calls.incremental import MarkupParser, Step, text_step, unfinished
from backends.tool_calls.json_header import LIMIT
from backends.tool_calls.markers import first_marker, is_partial, partial_length
from backends.tool_calls.parsed import ParsedCall

CALLS_BEGIN, CALLS_END = "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"
CALL_BEGIN, CALL_END = "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>"
SEP = "<｜tool▁sep｜>"
FENCE = "```"
# After the begin token: V3.1's `NAME<sep>{`, or V3's `function<sep>NAME\n` and a fence line.
_HEAD = re.compile(rf"([^\n]*?){SEP}(?:\s*(?=\{{)|([^\n]*)\n\s*(?:{FENCE}[^\n]*\n\s*)?(?=\{{))")


class DeepSeekV3Parser(MarkupParser):
    """Incremental: text streams out until a calls (or call) begin token, or a tail that may
    start one; then each call streams (or leaves whole), and text resumes after the section."""

    def __init__(self, tools: ToolsLike) -> None:
        super().__init__(tools)
        self._in_section = False
        self._section_calls = 0  # calls made in the current section
        self._after_arguments = False  # a streamed call's arguments ended: its markup follows

    def _step(self, buffer: str, final: bool) -> Step | None:
        if self._after_arguments:
            return self._call_end(buffer, final)
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

    def _call_end(self, buffer: str, final: bool) -> Step | None:
        """The markup after a streamed call's arguments, dropped up to its end token (or the
        next call's begin token, or the section's end, which it leaves in place)."""
        found = first_marker(buffer, (CALL_END, CALL_BEGIN, CALLS_END))
        if found is not None:
            self._after_arguments = False
            return Step(found[0] + (len(CALL_END) if found[1] == CALL_END else 0))
        if final:
            return Step(len(buffer))
        markup = len(buffer) - partial_length(buffer, (CALL_END, CALL_BEGIN, CALLS_END))
        return Step(markup) if markup else None

    def _call_at(self, buffer: str, start: int, final: bool) -> Step | None:
        """The call whose begin token is at `start`, with the markup before it."""
        body = start + len(CALL_BEGIN)
        head = _HEAD.match(buffer, body, min(len(buffer), body + LIMIT))
        name = None
        if head is not None:
            name = (head.group(1) if head.group(2) is None else head.group(2)).strip()
            if head.group(2) is not None and head.group(1).strip() != "function":
                name = None
        if name is not None and name in self.functions:
            self._enter_section()
            self._section_calls += 1
            self._after_arguments = True
            return self._open_call(name, head.end() if head else 0, (CALL_END,))
        end = buffer.find(CALL_END, start)
        if end < 0 and not final:
            return None
        consumed = len(buffer) if end < 0 else end + len(CALL_END)
        call = self._call(buffer[body : end if end >= 0 else None])
        self._enter_section()
        if call is None:
            return Step(consumed, buffer[:consumed], unfinished=end < 0)
        self._section_calls += 1
        return Step(consumed, calls=(call,))

    def _enter_section(self) -> None:
        if not self._in_section:
            self._in_section, self._section_calls = True, 0

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
