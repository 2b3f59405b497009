"""gpt-oss's Harmony format: the output is a run of messages, each a header then a body,

    <|channel|>analysis<|message|>Need the weather.<|end|>
    <|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json
    <|message|>{"city": "Paris"}<|call|>

(one line in the output; the prompt ends with `<|start|>assistant`, so the first header starts at
once). The markers are special tokens of the o200k_harmony tokenizer: the output must be decoded
with special tokens kept. What each message becomes, as in vLLM's Harmony path:

- `analysis`: reasoning (built-in tools such as `to=python` are called there: reasoning too);
- `final`, a `commentary` message without a recipient (a preamble shown to the user), a message
  without a channel, and text outside any message: content, markers stripped;
- a message to a function (`to=functions.NAME`, on whatever channel) and any `commentary` message
  with a recipient: passed to the content whole, header to end marker, for the tool-call parser;
  a header that the output left to the prompt's `<|start|>assistant` gets that prefix back.

Messages of one kind are joined with a newline, as vLLM joins them. A header that runs into a
marker other than `<|message|>` (or that the output ends inside) says nothing and is dropped;
a `max_tokens` cut drops a held tail that may have begun a marker (where the model stops by
itself, that tail is text it wrote);
one longer than `HEADER_LIMIT` characters is no header, and is content as written. The first
message's header must start with `<|channel|>` or ` to=` (or `<|start|>`): an output that starts
otherwise is not Harmony, and all content.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum, auto

from backends.reasoning.parsed import Split
from backends.text_origin import WRITTEN, Piece

HARMONY = "harmony"
START, END, MESSAGE = "<|start|>", "<|end|>", "<|message|>"
CHANNEL, CONSTRAIN = "<|channel|>", "<|constrain|>"
RETURN, CALL = "<|return|>", "<|call|>"
ASSISTANT = "assistant"
FUNCTIONS = "functions."
RECIPIENT = " to="  # how a recipient right after the role starts the first header
ENDS = (END, RETURN, CALL)  # what closes a message
HEADER_LIMIT = 256

_BODY_ENDS = (*ENDS, START)  # a message may run into the next one without its end marker
_HEADER_ENDS = (MESSAGE, *_BODY_ENDS)
_HEADER_WAIT = HEADER_LIMIT + max(map(len, _HEADER_ENDS))  # by then, any marker within it shows
_RECIPIENT = re.compile(r"(?:^|(?<=[\s>]))to=([^\s<]+)")
_CHANNEL = re.compile(re.escape(CHANNEL) + r"\s*([^\s<]+)")


@dataclass(frozen=True, slots=True)
class Header:
    """What a message's header says: its channel and its recipient, where it names them."""

    channel: str | None = None
    recipient: str | None = None

    @classmethod
    def read(cls, text: str) -> Header:
        """From the text between `<|start|>` (or the output's start) and `<|message|>`."""
        channel = _CHANNEL.search(text)
        recipient = _RECIPIENT.search(text)
        return cls(channel.group(1) if channel else None, recipient.group(1) if recipient else None)

    @property
    def function(self) -> str | None:
        """The function the message calls (`to=functions.NAME`), if it calls one."""
        if self.recipient is None or not self.recipient.startswith(FUNCTIONS):
            return None
        return self.recipient[len(FUNCTIONS) :] or None


class _Kind(Enum):
    REASONING = auto()
    CONTENT = auto()
    MARKUP = auto()  # a call, passed through whole


def _kind(header: Header) -> _Kind:
    if header.function is not None or (header.channel == "commentary" and header.recipient):
        return _Kind.MARKUP
    return _Kind.REASONING if header.channel == "analysis" else _Kind.CONTENT


class _Where(Enum):
    HEADER = auto()
    BODY = auto()
    BETWEEN = auto()  # after a message's end marker


class HarmonyParser:
    """Incremental: a body streams out at once, except a tail that may start an end marker; a
    header waits for its `<|message|>`, since its channel decides where the body goes."""

    def __init__(self) -> None:
        self._where = _Where.HEADER
        self._started = False  # the current header followed a `<|start|>` of the output
        self._kind = _Kind.CONTENT
        self._due = False  # the body said nothing yet: a newline may go before its text
        self._said: set[_Kind] = set()
        self._buffer = ""
        self._cut = False  # the output ended at `max_tokens`: a marker's start is dropped
        self._reasoning: list[str] = []
        self._content: list[str] = []
        self._origin: list[Piece] = []  # where each piece of content came from
        self._fed = 0  # characters fed so far: the buffer ends there

    @property
    def in_reasoning(self) -> bool:
        return self._where is _Where.BODY and self._kind is _Kind.REASONING

    def feed(self, text: str) -> Split:
        self._buffer += text
        self._fed += len(text)
        return self._drain(final=False)

    def finish(self, cut: bool = False) -> Split:
        """The rest; with `cut` (the output ended at `max_tokens`) a held tail that may have
        begun a marker is dropped, never shown."""
        self._cut = cut
        return self._drain(final=True)

    def _drain(self, final: bool) -> Split:
        while self._buffer:
            if self._where is _Where.HEADER:
                moved = self._header(final)
            elif self._where is _Where.BODY:
                moved = self._body(final)
            else:
                moved = self._between(final)
            if not moved:
                break
        split = Split("".join(self._reasoning), "".join(self._content), tuple(self._origin))
        self._reasoning, self._content, self._origin = [], [], []
        return split

    def _header(self, final: bool) -> bool:
        """Reads a whole header and opens its body; False while it is still arriving."""
        buffer = self._buffer
        if not self._started and buffer.startswith(START):  # a model that repeats the prompt's
            self._buffer, self._started = buffer[len(START) :], True
            return True
        if not self._started and not buffer.startswith((CHANNEL, RECIPIENT)):
            opening = any(m.startswith(buffer) for m in (START, CHANNEL, RECIPIENT))
            if opening and (not final or self._cut):
                self._buffer = "" if final else buffer
                return False
            self._open(_Kind.CONTENT)  # no header: not Harmony, the text is the answer
            return True
        found = _first(buffer, _HEADER_ENDS)
        if found is None and not final and len(buffer) < _HEADER_WAIT:
            return False  # a marker that starts within the limit may still arrive
        if found is None and len(buffer) <= HEADER_LIMIT:
            self._buffer = ""  # the output ended inside a header
            return False
        if found is None or found[0] > HEADER_LIMIT:
            self._open(_Kind.CONTENT)
            return True
        index, marker = found
        if marker != MESSAGE:  # a header cut short by another marker
            self._buffer, self._where = buffer[index:], _Where.BETWEEN
            return True
        end = index + len(MESSAGE)
        kind = _kind(Header.read(buffer[:index]))
        if kind is _Kind.MARKUP:
            written = START if self._started else START + ASSISTANT
            self._content.append(written + buffer[:end])
            self._origin += ((WRITTEN, len(written)), (self._at(), end))
        self._buffer = buffer[end:]
        self._open(kind)
        return True

    def _body(self, final: bool) -> bool:
        """Moves the body's text out up to its end; False when the rest must wait."""
        buffer = self._buffer
        found = _first(buffer, _BODY_ENDS)
        if found is None:
            keep = 0 if final and not self._cut else _partial_length(buffer, _BODY_ENDS)
            self._say(buffer[: len(buffer) - keep])
            self._buffer = "" if final else buffer[len(buffer) - keep :]
            return False
        index, marker = found
        self._say(buffer[:index])
        if marker == START:  # the next message began without this one's end marker
            self._buffer = buffer[index:]
        else:
            if self._kind is _Kind.MARKUP:
                self._content.append(marker)
                self._origin.append((self._at() + index, len(marker)))
            self._buffer = buffer[index + len(marker) :]
        self._where = _Where.BETWEEN
        return True

    def _between(self, final: bool) -> bool:
        """Finds the next message's start; stray end markers and whitespace go."""
        buffer = self._buffer.lstrip()
        self._buffer = buffer
        if not buffer:
            return False
        if buffer.startswith(START):
            self._buffer = buffer[len(START) :]
            self._where, self._started = _Where.HEADER, True
        elif buffer.startswith(CHANNEL):  # a header whose `<|start|>assistant` is missing
            self._where, self._started = _Where.HEADER, False
        elif (marker := next((m for m in ENDS if buffer.startswith(m)), None)) is not None:
            self._buffer = buffer[len(marker) :]
        elif (not final or self._cut) and any(
            m.startswith(buffer) for m in (START, CHANNEL, *ENDS)
        ):
            self._buffer = "" if final else buffer
            return False
        else:
            self._open(_Kind.CONTENT)  # text outside any message
        return True

    def _open(self, kind: _Kind) -> None:
        self._where, self._kind, self._due = _Where.BODY, kind, True

    def _at(self) -> int:
        """Where the buffer starts in the output."""
        return self._fed - len(self._buffer)

    def _say(self, text: str) -> None:
        """Text of the current body (the front of the buffer), after a newline if an earlier
        message said the same kind."""
        if not text:
            return
        kind = self._kind
        out = self._reasoning if kind is _Kind.REASONING else self._content
        if kind is not _Kind.MARKUP:
            if self._due and kind in self._said:
                out.append("\n")
                if kind is _Kind.CONTENT:
                    self._origin.append((WRITTEN, 1))
            self._said.add(kind)
        self._due = False
        out.append(text)
        if kind is not _Kind.REASONING:
            self._origin.append((self._at(), len(text)))


def _first(text: str, markers: tuple[str, ...]) -> tuple[int, str] | None:
    """The earliest of `markers` in `text`, with its index (no marker starts another)."""
    best: tuple[int, str] | None = None
    for marker in markers:
        index = text.find(marker)
        if index >= 0 and (best is None or index < best[0]):
            best = (index, marker)
    return best


def _partial_length(text: str, markers: tuple[str, ...]) -> int:
    """How much of the end of `text` could be the start of one of `markers`."""
    for size in range(min(max(map(len, markers)) - 1, len(text)), 0, -1):
        tail = text[-size:]
        if any(marker.startswith(tail) for marker in markers):
            return size
    return 0
