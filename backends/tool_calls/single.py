"""`parallel_tool_calls: false` with `tool_choice` auto: the answer keeps its first call and
drops any later one, as vLLM does (a forced "required" call is limited by its JSON schema)."""

from __future__ import annotations

from backends.tool_calls.parsed import Parsed, ToolCallParser


class FirstCallOnly:
    """Wraps a format's parser; text is untouched, calls after the first are dropped."""

    __slots__ = ("_called", "_inner")

    def __init__(self, inner: ToolCallParser) -> None:
        self._inner = inner
        self._called = False

    @property
    def finish_reason(self) -> str:
        return self._inner.finish_reason

    def feed(self, text: str) -> Parsed:
        return self._first(self._inner.feed(text))

    def finish(self, cut: bool = False) -> Parsed:
        return self._first(self._inner.finish(cut))

    def _first(self, parsed: Parsed) -> Parsed:
        if not parsed.calls:
            return parsed
        if self._called:
            return Parsed(parsed.content)
        self._called = True
        return Parsed(parsed.content, parsed.calls[:1])
