"""What a reasoning parser makes of a model's text: the thinking, and the answer."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from backends.text_origin import Origin


@dataclass(frozen=True, slots=True)
class Split:
    """Text that became known from some more output: thinking, and text meant as the answer,
    with where the answer's text came from in the output (`backends.text_origin`)."""

    reasoning: str = ""
    content: str = ""
    origin: Origin = field(default=(), compare=False)  # where the text was, not what it is


class ReasoningParser(Protocol):
    """Splits a model's output text into reasoning and content, incrementally: `feed` each piece
    of text as it is decoded, then `finish` once. Only a tail that may be the start of a marker
    is held back; `finish` releases it, or drops it with `cut` (the output ended at
    `max_tokens`, perhaps inside a marker, which is never shown)."""

    @property
    def in_reasoning(self) -> bool:
        """Whether the text fed so far leaves the output inside reasoning. A token is a reasoning
        token when this is true both before and after its text is fed: the markers' own tokens
        are then not counted, as in vLLM's `count_reasoning_tokens`."""
        ...

    def feed(self, text: str) -> Split: ...

    def finish(self, cut: bool = False) -> Split: ...
