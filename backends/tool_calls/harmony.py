"""gpt-oss's Harmony tool calls: a message whose recipient is a function,

    <|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json
    <|message|>{"city": "Paris"}<|call|>

(one line in the output). The recipient may also follow the role, before the channel, with the
content type bare: `<|start|>assistant to=functions.get_weather<|channel|>commentary json
<|message|>`, as gpt-oss's chat template writes calls back. The Harmony reasoning parser hands
such messages over whole and everything else as plain text; on raw output (no reasoning parser)
a message may also open at `<|channel|>`, and other messages' markup stays content as written.

The arguments are the body, a JSON object; a call whose body is not one, or whose function is
not among the request's tools, is text. A call of one of the tools whose body opens with `{`
streams: its header then, the arguments as they are written; what follows them up to the
call's end is markup. A call ends at `<|call|>` (or `<|end|>`, `<|return|>`),
or where the next message's `<|start|>` begins; at the end of the answer, a call missing its end
marker counts if its JSON is whole (the engine stops on `<|call|>`, which the decoder hides).
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from backends.reasoning.harmony import CHANNEL, ENDS, HEADER_LIMIT, MESSAGE, START, Header
from backends.tool_calls import exact_json
from backends.tool_calls.functions import ToolsLike
from backends.tool_calls.incremental import MarkupParser, Step, text_step, unfinished
from backends.tool_calls.markers import first_marker, partial_length
from backends.tool_calls.parsed import ParsedCall

_OPENERS = (START, CHANNEL)
_BODY_ENDS = (*ENDS, START)
_HEADER_ENDS = (MESSAGE, *_BODY_ENDS)
_HEADER_WAIT = len(START) + HEADER_LIMIT + max(map(len, _HEADER_ENDS))
_LONGEST_BODY_END = max(map(len, _BODY_ENDS))
_SPACE = re.compile(r"\s*")


class HarmonyParser(MarkupParser):
    """Incremental: text streams out until `<|start|>` or `<|channel|>` (or a tail that may
    start one); a header waits for its `<|message|>`, and a call streams from its body's `{`
    (or is released whole at its end)."""

    def __init__(self, tools: ToolsLike) -> None:
        super().__init__(tools)
        self._after_arguments = False  # a streamed call's arguments ended: its markup follows
        # (stream offset, index): a waiting call body was searched for its end before index
        self._searched = (-1, 0)

    def _step(self, buffer: str, final: bool) -> Step | None:
        if self._after_arguments:
            return self._call_end(buffer, final)
        if not buffer.startswith(_OPENERS):
            return text_step(buffer, _OPENERS, final)
        opener = START if buffer.startswith(START) else CHANNEL
        found = first_marker(buffer, _HEADER_ENDS, len(opener), _HEADER_WAIT)
        if found is None and not final and len(buffer) < _HEADER_WAIT:
            return None
        if found is None and len(buffer) < _HEADER_WAIT:
            return unfinished(buffer)  # the answer ended inside a header
        if found is None or found[1] != MESSAGE or found[0] > len(opener) + HEADER_LIMIT:
            return Step(len(opener), opener)  # no header after all: the marker is text
        header_end = found[0] + len(MESSAGE)
        name = Header.read(buffer[: found[0]]).function
        if name is None or name not in self.functions:
            return Step(header_end, buffer[:header_end])  # another message, or no tool's: text
        space = _SPACE.match(buffer, header_end)
        body = space.end() if space else header_end
        if body == len(buffer) and not final:
            return None
        if body < len(buffer) and buffer[body] == "{":
            self._after_arguments = True
            return self._open_call(name, body, _BODY_ENDS)
        # a body that waits for its end is searched once: each piece only from where the last
        # search could not yet tell
        offset, searched = self._searched
        end = first_marker(buffer, _BODY_ENDS, searched if offset == self._offset else body)
        if end is None and not final:
            self._searched = (self._offset, max(body, len(buffer) - _LONGEST_BODY_END + 1))
            return None  # a call in progress: wait for its end
        body_end = len(buffer) if end is None else end[0]
        consumed = body_end if end is None or end[1] == START else body_end + len(end[1])
        call = self._call(name, buffer[header_end:body_end])
        if call is None:
            return Step(consumed, buffer[:consumed], unfinished=end is None)
        return Step(consumed, calls=(call,))

    def _call_end(self, buffer: str, final: bool) -> Step | None:
        """The markup after a streamed call's arguments, dropped up to its end marker (a next
        message's `<|start|>` stays in place)."""
        found = first_marker(buffer, _BODY_ENDS)
        if found is not None:
            self._after_arguments = False
            return Step(found[0] + (0 if found[1] == START else len(found[1])))
        if final:
            return Step(len(buffer))
        markup = len(buffer) - partial_length(buffer, _BODY_ENDS)
        return Step(markup) if markup else None

    def _call(self, name: str, body: str) -> ParsedCall | None:
        try:
            value: Any = exact_json.loads(body.strip())
        except orjson.JSONDecodeError:
            return None
        return self.functions.call(name, value) if isinstance(value, dict) else None
