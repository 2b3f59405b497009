"""The pythonic tool-call format (Llama 3.2 / Llama 4 with a pythonic template, ToolACE): the
calls as a Python list, `[get_weather(city="Paris"), search(q="x", limit=3)]`.

The list counts where a line starts (the answer's first line included, after any leading
whitespace) or after Llama 4's `<|python_start|>`; a `<|python_end|>` right after it is
markup too. It is parsed with `ast`, literals only (see `python_literals`), never evaluated.
A list that is not all calls to requested functions is text, as written.
"""

from __future__ import annotations

from backends.tool_calls.brackets import BROKEN, BracketScan
from backends.tool_calls.functions import ToolsLike
from backends.tool_calls.incremental import MarkupParser, Step, text_step, unfinished
from backends.tool_calls.markers import is_partial
from backends.tool_calls.parsed import ParsedCall
from backends.tool_calls.python_literals import NotLiteral, call_list

START, END = "<|python_start|>", "<|python_end|>"
LINE_LIST = "\n["


class PythonicParser(MarkupParser):
    """Incremental: text streams out until a line that opens with `[` (or the start tag), or
    a tail that may be one; a list is released once its bracket closes."""

    def __init__(self, tools: ToolsLike) -> None:
        super().__init__(tools)
        self._line_start = True  # the buffer starts a line (at first: the answer)
        self._scan = BracketScan(python=True)
        self._after_list = False

    def _step(self, buffer: str, final: bool) -> Step | None:
        if self._after_list:  # the end tag that may follow a list is markup
            if is_partial(buffer, END):
                return unfinished(buffer) if final else None
            self._after_list = False
            return Step(len(END)) if buffer.startswith(END) else Step(0)
        if self._line_start:
            space = len(buffer) - len(buffer.lstrip())
            if space == len(buffer) and not final:
                return None
            if buffer[space:].startswith("["):
                return self._list_at(buffer, space, final)
            self._line_start = False
            return Step(0)
        if buffer.startswith(START):
            start = len(buffer) - len(buffer[len(START) :].lstrip())
            if start == len(buffer):
                return unfinished(buffer) if final else None
            if buffer[start:].startswith("["):
                return self._list_at(buffer, start, final)
            return Step(len(START), START)
        step = text_step(buffer, (START, LINE_LIST), final)
        if step is not None and buffer.startswith(LINE_LIST, step.consumed):
            self._line_start = True
            return Step(step.consumed + 1, buffer[: step.consumed + 1])
        return step

    def _list_at(self, buffer: str, start: int, final: bool) -> Step | None:
        """The list at `start` as calls, with the markup before it; or all of it as text."""
        end = self._scan.end(buffer, start, self._offset)
        if end is None and not final:
            return None
        self._line_start = False
        if end is None:
            return unfinished(buffer)
        if end == BROKEN:
            return Step(start + 1, buffer[: start + 1])
        calls = self._calls(buffer[start:end])
        if not calls:
            return Step(end, buffer[:end])
        self._after_list = True
        return Step(end, calls=calls)

    def _calls(self, text: str) -> tuple[ParsedCall, ...]:
        try:
            listed = call_list(text)
        except NotLiteral:
            return ()
        calls = [self.functions.call(name, arguments) for name, arguments in listed]
        return tuple(c for c in calls if c is not None) if None not in calls else ()
