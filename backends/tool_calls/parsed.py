"""What a tool-call parser makes of a model's text: the text meant for the user, and calls."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from backends.text_origin import Origin
from core.answers import new_call_id


@dataclass(frozen=True, slots=True)
class ParsedCall:
    """One function call: `arguments` is the JSON text of the arguments object (or its start,
    while it streams)."""

    name: str
    arguments: str
    id: str = field(default_factory=new_call_id)


@dataclass(frozen=True, slots=True)
class Parsed:
    """What became known from some more text: content to show, calls begun (their arguments
    so far: all of them, or a start that more `arguments` continue), and `arguments`: more of
    the arguments of the call begun last before this text (they come before these `calls`).
    `origin`: where the content came from in the parser's input (`backends.text_origin`)."""

    content: str = ""
    calls: tuple[ParsedCall, ...] = ()
    arguments: str = ""
    origin: Origin = field(default=(), compare=False)  # where the text was, not what it is


class ToolCallParser(Protocol):
    """Turns a model's output text into content and calls, incrementally: `feed` each piece of
    text as it is decoded, then `finish` once (`cut`: the answer was cut short by the token
    limit). Text that may still turn out to be call markup is held back; markup that does not
    parse as a call to one of the tools is content, but for that of a call the cut left
    unfinished, which is dropped."""

    @property
    def finish_reason(self) -> str:
        """What an answer that stopped having made calls ends with."""
        ...

    def feed(self, text: str) -> Parsed: ...

    def finish(self, cut: bool = False) -> Parsed: ...
