"""`parallel_tool_calls: false` with `tool_choice` auto: the answer keeps its first call and
drops any later one, as vLLM does (a forced "required" call is limited by its JSON schema)."""

from __future__ import annotations

from backends.tool_calls.parsed import Parsed, ToolCallParser


class FirstCallOnly:
    """Wraps a format's parser; text is untouched, calls after the first are dropped (and the
    arguments streamed for them)."""

    __slots__ = ("_begun", "_inner")

    def __init__(self, inner: ToolCallParser) -> None:
        self._inner = inner
        self._begun = 0  # calls the format has begun

    @property
    def finish_reason(self) -> str:
        return self._inner.finish_reason

    def feed(self, text: str) -> Parsed:
        return self._first(self._inner.feed(text))

    def finish(self, cut: bool = False) -> Parsed:
        return self._first(self._inner.finish(cut))

    def _first(self, parsed: Parsed) -> Parsed:
        if not parsed.calls and (not parsed.arguments or self._begun == 1):
            return parsed
        arguments = parsed.arguments if self._begun == 1 else ""
        calls = parsed.calls[:1] if self._begun == 0 else ()
        self._begun += len(parsed.calls)
        return Parsed(parsed.content, calls, arguments, parsed.origin)
