"""The shape every markup parser shares: text is fed in pieces into a buffer, and the parser
takes decided steps off its front; whatever may still become a call waits in the buffer.

A step is decided only when more text could not change it, so any split of an output into
pieces gives the result of the whole. On `finish` nothing waits: the parser decides with what
it has, and whatever it still declines is content; except when the answer was cut short (the
token limit): then the markup of a call it had begun and never ended, or a tail that may have
started a marker, is dropped, as vLLM never shows it, and the calls that did end are kept.

A call streams: once its header is read (the name, one of the tools, and the `{` its arguments
open with), the call leaves with empty arguments, and then its arguments leave as the model
writes them (`OpenArguments`), the model's own text, whole or in pieces alike. From then on the
call is one whatever follows: arguments that stop being JSON, or are cut short, end where the
valid part ends (the rest of the call's markup is not content).
"""

from __future__ import annotations

from collections.abc import Sequence

from backends.text_origin import Piece
from backends.tool_calls.functions import Functions, ToolsLike
from backends.tool_calls.markers import first_marker, partial_length
from backends.tool_calls.open_arguments import OpenArguments
from backends.tool_calls.parsed import Parsed, ParsedCall
from backends.tool_calls.step import Step

__all__ = ["MarkupParser", "Step", "text_step", "unfinished"]


def unfinished(buffer: str) -> Step:
    """All of `buffer`, at the end of the answer, as the markup of a call that never ended."""
    return Step(len(buffer), buffer, unfinished=True)


def text_step(buffer: str, markers: Sequence[str], final: bool) -> Step | None:
    """The content before the first of `markers` (all of it but a tail that may start one);
    None when nothing can leave yet. With `final` that tail is a step of its own, the start of
    markup the answer ended in. `buffer` must not start with a marker."""
    found = first_marker(buffer, markers)
    if found is not None:
        return Step(found[0], buffer[: found[0]])
    keep = partial_length(buffer, markers)
    if keep == len(buffer):
        return unfinished(buffer) if final else None
    return Step(len(buffer) - keep, buffer[: len(buffer) - keep])


class MarkupParser:
    """Base of the parsers: `feed` and `finish` drive `_step`, which each format writes."""

    finish_reason = "tool_calls"  # what a stop becomes when the answer made calls

    def __init__(self, tools: ToolsLike) -> None:
        self.functions = Functions.of(tools)
        self._buffer = ""
        self._offset = 0  # stream position of the buffer's first character
        self._open: OpenArguments | None = None  # the arguments of the call being streamed

    def feed(self, text: str) -> Parsed:
        self._buffer += text
        return self._drain(final=False)

    def finish(self, cut: bool = False) -> Parsed:
        return self._drain(final=True, cut=cut)

    def _drain(self, final: bool, cut: bool = False) -> Parsed:
        content: list[str] = []
        origin: list[Piece] = []
        calls: list[ParsedCall] = []
        more: list[str] = []  # arguments of a call begun before this text
        while self._buffer:
            if self._open is not None:
                step = self._open.step(self._buffer, final)
                if self._open.done:
                    self._open = None
            else:
                step = self._step(self._buffer, final)
            if step is None:
                if final:  # never lose text, whatever a format leaves undecided
                    content.append(self._buffer)
                    origin.append((self._offset, len(self._buffer)))
                    self._offset += len(self._buffer)
                    self._buffer = ""
                break
            if step.content and not (cut and step.unfinished):
                content.append(step.content)  # a copy of the front of the buffer
                origin.append((self._offset, len(step.content)))
            calls.extend(step.calls)
            if step.arguments and calls:
                last = calls[-1]
                calls[-1] = ParsedCall(last.name, last.arguments + step.arguments, last.id)
            elif step.arguments:
                more.append(step.arguments)
            self._buffer = self._buffer[step.consumed :]
            self._offset += step.consumed
        return Parsed("".join(content), tuple(calls), "".join(more), tuple(origin))

    def _open_call(
        self, name: str, consumed: int, ends: Sequence[str], enclosed: bool = False
    ) -> Step:
        """The step that sends a call's header: `consumed` characters of markup, up to the `{`
        its arguments open with, which then stream until they close or meet one of `ends`
        (the markup that ends a call, outside a JSON string; after it the format's `_step`
        reads on). `enclosed`: the arguments are a member of a call object, the rest of which
        is markup (see `OpenArguments`)."""
        self._open = OpenArguments(ends, enclosed)
        return Step(consumed, calls=(ParsedCall(name, ""),))

    def _step(self, buffer: str, final: bool) -> Step | None:
        """The next decided step off the front of `buffer`, or None to wait for more text
        (with `final`, None makes the rest content)."""
        raise NotImplementedError
