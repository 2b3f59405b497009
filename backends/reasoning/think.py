"""The `<think>...</think>` formats: the model thinks between the markers, then answers.

`deepseek_r1` (DeepSeek-R1 and its distills): everything before `</think>` is reasoning, whether
or not `<think>` was generated (newer R1 templates put `<think>\\n` at the end of the prompt), as
vLLM's `deepseek_r1` parser does. `qwen3` (Qwen3 and other templates with a thinking switch): the
output starts inside reasoning when the prompt left a `<think>` open (vLLM checks the prompt the
same way); otherwise an output without `<think>` is all content (`enable_thinking: false` writes
an empty block into the prompt), as in vLLM's `qwen3` parser. Unlike vLLM, only a `<think>` at the
start of the output (after newlines) opens reasoning: an answer that mentions the tag stays
content, and nothing is held back once the output has begun otherwise.

In both, output that ends before `</think>` is all reasoning (the answer was cut off while
thinking), the first `</think>` ends reasoning for good (text after it is content, as written),
and one `<think>` at the start of reasoning is dropped (a model that repeats the prompt's). A
`max_tokens` cut inside a marker (the output ends in `<thin` or `\\n</thi`) drops that start of
it, as the tool-call parsers drop unfinished markup: where the model stops by itself there, the
text is what it wrote.

Newlines: the newlines right after `<think>` and right after `</think>` are dropped, so
`<think>\\nabc\\n</think>\\n\\nAnswer` gives reasoning `abc\\n` and content `Answer`. vLLM keeps
them (content `\\n\\nAnswer`), which clients then have to strip; Qwen3's own template strips them
when it reads an answer back. The newline before `</think>` stays, as in vLLM: dropping it would
mean holding back every newline in the reasoning.
"""

from __future__ import annotations

from enum import Enum, auto

from backends.reasoning.parsed import Split
from backends.text_origin import Origin

OPEN, CLOSE = "<think>", "</think>"
DEEPSEEK_R1, QWEN3 = "deepseek_r1", "qwen3"


def prompt_opens_reasoning(prompt_text: str) -> bool:
    """Whether a rendered prompt ends inside an open think block: its last `<think>` comes after
    its last `</think>`, with only whitespace after it."""
    start = prompt_text.rfind(OPEN)
    return (
        start >= 0
        and prompt_text.rfind(CLOSE) < start
        and not prompt_text[start + len(OPEN) :].strip()
    )


class _Where(Enum):
    BEFORE = auto()  # nothing but newlines yet, and no think block open: `<think>` may come
    REASONING = auto()
    CONTENT = auto()


class ThinkParser:
    """Incremental: text streams out at once, except leading newlines (dropped, or, before a
    possible `<think>`, held) and a tail that may be the start of `<think>` or `</think>`."""

    def __init__(self, format: str, *, starts_inside: bool) -> None:
        if format not in (DEEPSEEK_R1, QWEN3):
            raise ValueError(f"unknown reasoning format {format!r}")
        inside = starts_inside or format == DEEPSEEK_R1
        self._where = _Where.REASONING if inside else _Where.BEFORE
        self._fresh = True  # at the start of the current part: its leading newlines go
        self._may_open = True  # a `<think>` at the start of reasoning is still to be dropped
        self._buffer = ""
        self._fed = 0  # characters fed so far: the buffer ends there

    @property
    def in_reasoning(self) -> bool:
        return self._where is _Where.REASONING

    def feed(self, text: str) -> Split:
        self._buffer += text
        self._fed += len(text)
        reasoning: list[str] = []
        content: list[str] = []
        origin: Origin = ()
        while self._buffer:
            if self._where is _Where.BEFORE:
                if not self._before():
                    break
            elif self._where is _Where.REASONING:
                if not self._reasoning(reasoning):
                    break
            else:
                if self._fresh:
                    self._buffer = self._buffer.lstrip("\n")
                    self._fresh = not self._buffer
                if self._buffer:
                    content.append(self._buffer)
                    origin += ((self._fed - len(self._buffer), len(self._buffer)),)
                self._buffer = ""
        return Split("".join(reasoning), "".join(content), origin)

    def finish(self, cut: bool = False) -> Split:
        """The rest: a held tail is reasoning inside reasoning, else content; `cut` (the output
        ended at `max_tokens`) drops it: it may have begun a marker."""
        rest, self._buffer = ("" if cut else self._buffer), ""
        if self._where is _Where.REASONING:
            return Split(reasoning=rest)
        return Split(content=rest, origin=((self._fed - len(rest), len(rest)),) if rest else ())

    def _before(self) -> bool:
        """Opens reasoning at a leading `<think>`, or decides the output is all content; False
        while the buffer may still become `<think>`."""
        rest = self._buffer.lstrip("\n")
        if rest.startswith(OPEN):
            self._buffer = rest[len(OPEN) :]
            self._where, self._fresh, self._may_open = _Where.REASONING, True, False
            return True
        if OPEN.startswith(rest):
            return False
        self._where, self._fresh = _Where.CONTENT, False  # no think block: content as written
        return True

    def _reasoning(self, out: list[str]) -> bool:
        """Moves reasoning to `out` up to `</think>`; False when the rest must wait."""
        if self._fresh:
            self._buffer = self._buffer.lstrip("\n")
            if self._may_open and self._buffer.startswith(OPEN):
                self._buffer = self._buffer[len(OPEN) :]
                self._may_open = False
                return True
            if not self._buffer or (self._may_open and OPEN.startswith(self._buffer)):
                return False
            self._fresh = False
        end = self._buffer.find(CLOSE)
        if end >= 0:
            out.append(self._buffer[:end])
            self._buffer = self._buffer[end + len(CLOSE) :]
            self._where, self._fresh = _Where.CONTENT, True
            return True
        keep = _partial_length(self._buffer, CLOSE)
        out.append(self._buffer[: len(self._buffer) - keep])
        self._buffer = self._buffer[len(self._buffer) - keep :]
        return False


def _partial_length(text: str, marker: str) -> int:
    """How much of the end of `text` could be the start of `marker`."""
    for size in range(min(len(marker) - 1, len(text)), 0, -1):
        if marker.startswith(text[-size:]):
            return size
    return 0
