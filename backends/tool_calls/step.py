"""What a markup parser decides at a time about the front of its buffer."""

from __future__ import annotations

from dataclasses import dataclass

from backends.tool_calls.parsed import ParsedCall


@dataclass(frozen=True, slots=True)
class Step:
    """The first `consumed` characters of the buffer, decided: as content (a copy of the front
    of those characters: what follows it in them is markup), as calls (a call's
    `arguments` may be only their start, the rest following as open arguments), or as more
    `arguments` of the call begun last (a step that consumes nothing changes the parser's
    state only). `unfinished`: the content is the markup of a call that had begun when the
    answer ended, dropped if it was cut short."""

    consumed: int
    content: str = ""
    calls: tuple[ParsedCall, ...] = ()
    unfinished: bool = False
    arguments: str = ""
