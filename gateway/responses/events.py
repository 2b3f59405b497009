"""A streamed answer as the Responses API's typed events, in the order the official SDK
consumes them: `response.created`, `response.in_progress`, per output item `added`, its
deltas and `done`s, then `response.completed` (or `response.incomplete`, `response.failed`).

Output items open and close as the answer moves from reasoning to text to calls, one at a time
(each is added, filled and done before the next is added, as OpenAI streams them). A reasoning
item streams as a message does, through one content part (`reasoning_text`, as OpenAI
streams gpt-oss's thinking): `content_part.added`, `reasoning_text.delta`s,
`reasoning_text.done`, `content_part.done`, so that a client adding up the events holds the
item the whole response shows. A call the gateway parsed arrives whole (its arguments are one
delta); a pass-through backend's call arrives as an id and name, then argument fragments. A
call that starts while another is open waits, holding its fragments, until the answer moves on
(a pass-through backend may yet send fragments of the open one): then each is streamed in turn.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from core.answers import ChoiceDelta, StreamChunk, Usage
from core.errors import GatewayError
from gateway.responses.objects import ResponseShell, content_logprobs, output_text, status_of

# Stores the final response object (`store: true`); says whether it was stored.
Keep = Callable[[dict[str, Any]], Awaitable[bool]]


async def kept(response: dict[str, Any], keep: Keep | None) -> dict[str, Any]:
    """The final response as the client is shown it, once `keep` has stored it or failed
    to: a response that was not stored says `store: false`, so no client is handed an id
    that reads as a 404."""
    if keep is None or await keep(response):
        return response
    return {**response, "store": False}


def response_error_code(error: GatewayError) -> str:
    """A failed response's `error.code`: the SDK types it as an enum, in which a failure after
    the first byte is a rate limit, a prompt refused, or the server's failure."""
    if error.status == 429:
        return "rate_limit_exceeded"
    if 400 <= error.status < 500:
        return "invalid_prompt"
    return "server_error"


@dataclass(slots=True)
class _OpenCall:
    """A call not done yet: what its head said, and its argument fragments so far."""

    call_id: str | None
    name: str
    fragments: list[str] = field(default_factory=list)


class ResponseEvents:
    """Renders the chunks of one response; `close` or `fail` ends it."""

    __slots__ = (
        "_calls",
        "_counts",
        "_finish",
        "_held_logprobs",
        "_item",
        "_keep",
        "_last_call",
        "_live",
        "_logprobs",
        "_output",
        "_parts",
        "_sequence",
        "_shell",
        "_started",
        "_usage",
    )

    def __init__(self, shell: ResponseShell, keep: Keep | None = None) -> None:
        self._shell = shell
        self._keep = keep
        self._sequence = 0
        self._started = False
        self._output: list[dict[str, Any]] = []  # every item so far, in order, open or done
        self._item: int | None = None  # where the open reasoning or message item is
        self._parts: list[str] = []  # its text so far
        self._logprobs: list[Any] = []  # a message's tokens' logprobs so far (if asked for)
        # Those of tokens that brought no text yet (a character's first bytes), until the
        # text that ends the character comes.
        self._held_logprobs: list[Any] = []
        # Calls not done yet by their chat `index`, in the order they started. A pass-through
        # backend may interleave two calls' fragments; each goes to its own.
        self._calls: dict[int, _OpenCall] = {}
        self._live: tuple[int, int] | None = None  # the streamed call: its index and position
        self._last_call: int | None = None
        self._counts = {"reasoning": 0, "message": 0, "function_call": 0}
        self._finish: str | None = None
        self._usage: Usage | None = None

    def render(self, chunk: StreamChunk) -> bytes:
        events: list[bytes] = []
        if not self._started:
            self._started = True
            shell = self._shell.response("in_progress", [], None)
            events.append(self._event("response.created", {"response": shell}))
            events.append(self._event("response.in_progress", {"response": shell}))
        for delta in chunk.deltas:
            self._delta(delta, events)
        if chunk.usage is not None:
            self._usage = chunk.usage
        return b"".join(events)

    async def close(self) -> bytes:
        """The last items' `done`s and `response.completed` (or `response.incomplete`), sent
        once the response is stored: its `store` says whether it was."""
        events: list[bytes] = []
        self._close_all(events)
        status, incomplete = status_of(self._finish)
        if status == "completed" and not self._counts["message"] + self._counts["function_call"]:
            # An answer with nothing said is an empty message, as the whole response shows.
            self._open_text(
                self._shell.message_item("", "in_progress", self._next("message")), events
            )
            self._close_text(events)
        response = self._shell.response(status, self._output, self._usage, incomplete=incomplete)
        response = await kept(response, self._keep)
        kind = "response.completed" if status == "completed" else "response.incomplete"
        events.append(self._event(kind, {"response": response}))
        return b"".join(events)

    async def fail(self, error: GatewayError) -> bytes:
        """The `error` event (the gateway's own code) and `response.failed`, whose error code
        is one of the SDK's enum and whose output is every item streamed so far (`_so_far`);
        the failed response is kept too, as OpenAI keeps it: its id was announced
        (`response.created`), so a GET must find it (its `store` says whether one will)."""
        error = self._shell.names.renamed(error)
        message = error.public_message
        detail = {"code": response_error_code(error), "message": message}
        failed = self._shell.response("failed", self._so_far(), self._usage, error=detail)
        failed = await kept(failed, self._keep)
        return self._event(
            "error", {"code": error.code or error.type, "message": message, "param": error.param}
        ) + self._event("response.failed", {"response": failed})

    def _delta(self, delta: ChoiceDelta, events: list[bytes]) -> None:
        if delta.reasoning:
            self._held_logprobs = []  # they were the thinking's
            if self._kind() != "reasoning":
                self._open_text(self._shell.reasoning_item("", self._next("reasoning")), events)
            self._text_delta("response.reasoning_text.delta", delta.reasoning, events)
        if delta.text:
            if self._kind() != "message":
                item = self._shell.message_item("", "in_progress", self._next("message"))
                self._open_text(item, events)
            # A delta's logprobs are its text's (a pass-through backend's thinking or call
            # deltas may carry their own tokens': they are no message's).
            logprobs = content_logprobs(delta.logprobs)
            if self._held_logprobs:
                logprobs, self._held_logprobs = [*self._held_logprobs, *logprobs], []
            self._logprobs.extend(logprobs)
            self._text_delta("response.output_text.delta", delta.text, events, logprobs=logprobs)
        elif delta.logprobs is not None and not (delta.reasoning or delta.tool_calls):
            # A token holding only a character's first bytes brings no text: its logprobs go
            # with the text that ends the character (a whole answer lists them all too).
            self._held_logprobs.extend(content_logprobs(delta.logprobs))
        for call in delta.tool_calls or ():
            self._call(call, events)
        if delta.finish_reason is not None:
            self._finish = delta.finish_reason

    def _call(self, call: dict[str, Any], events: list[bytes]) -> None:
        function = call.get("function") or {}
        arguments = function.get("arguments") or ""
        index = call.get("index")
        if not isinstance(index, int):  # no index: a fragment continues the last call
            fresh = call.get("id") is not None or self._last_call is None
            index = self._counts["function_call"] + len(self._calls) if fresh else self._last_call
        assert index is not None
        open_call = self._calls.get(index)
        if open_call is None and self._capped():
            self._last_call = index  # its fragments without an index are dropped with it
            return
        if open_call is None:
            self._close_text(events)
            open_call = self._calls[index] = _OpenCall(call.get("id"), function.get("name", ""))
            if self._live is None:
                self._start_call(index, open_call, events)
        self._last_call = index
        if arguments:
            open_call.fragments.append(arguments)
            if self._live is not None and self._live[0] == index:
                self._arguments_delta(self._live[1], arguments, events)

    def _capped(self) -> bool:
        """Whether the response holds `max_tool_calls` calls already: a later one is dropped."""
        cap = self._shell.request.max_tool_calls
        live = 1 if self._live is not None else 0
        return cap is not None and self._counts["function_call"] - live + len(self._calls) >= cap

    def _start_call(self, index: int, open_call: _OpenCall, events: list[bytes]) -> None:
        """Add a call's item, and stream the fragments it holds; it is the live call."""
        ordinal = self._next("function_call")
        item = self._shell.call_item(
            ordinal,
            open_call.call_id or self._shell.call_id(ordinal),
            open_call.name,
            "",
            "in_progress",
        )
        self._live = (index, len(self._output))
        self._add(item, events)
        if open_call.fragments:
            self._arguments_delta(self._live[1], "".join(open_call.fragments), events)

    def _arguments_delta(self, position: int, arguments: str, events: list[bytes]) -> None:
        ids = {"item_id": self._output[position]["id"], "output_index": position}
        events.append(
            self._event("response.function_call_arguments.delta", {**ids, "delta": arguments})
        )

    def _next(self, kind: str) -> int:
        """The ordinal of the next item of this kind (ids differ per item: clients key by them)."""
        ordinal = self._counts[kind]
        self._counts[kind] = ordinal + 1
        return ordinal

    def _kind(self) -> str | None:
        return None if self._item is None else str(self._output[self._item]["type"])

    def _open_text(self, item: dict[str, Any], events: list[bytes]) -> None:
        """Add a reasoning or message item and its one content part (a `reasoning_text` or
        an `output_text`), which the deltas then fill: content_index 0."""
        self._close_all(events)
        self._item = len(self._output)
        if item["type"] == "reasoning":
            item = {**item, "content": [], "status": "in_progress"}
        self._add(item, events)
        events.append(self._event("response.content_part.added", self._at(part=self._part(""))))

    def _add(self, item: dict[str, Any], events: list[bytes]) -> None:
        self._output.append(item)
        events.append(
            self._event(
                "response.output_item.added", {"output_index": len(self._output) - 1, "item": item}
            )
        )

    def _text_delta(self, kind: str, text: str, events: list[bytes], **extra: Any) -> None:
        self._parts.append(text)
        events.append(self._event(kind, self._at(delta=text, **extra)))

    def _close_all(self, events: list[bytes]) -> None:
        """Close the open item; each waiting call is then added, filled and done in turn."""
        self._close_text(events)
        for index, open_call in self._calls.items():
            if self._live is None or self._live[0] != index:
                self._start_call(index, open_call, events)
            assert self._live is not None
            position = self._live[1]
            item = self._output[position]
            arguments = "".join(open_call.fragments) or "{}"
            ids = {"item_id": item["id"], "output_index": position}
            events.append(
                self._event(
                    "response.function_call_arguments.done",
                    {**ids, "name": item["name"], "arguments": arguments},
                )
            )
            self._done(position, {**item, "arguments": arguments, "status": "completed"}, events)
            self._live = None
        self._calls = {}
        self._last_call = None

    def _close_text(self, events: list[bytes]) -> None:
        position = self._item
        if position is None:
            return
        text = "".join(self._parts)
        if self._kind() == "message":
            self._logprobs.extend(self._held_logprobs)  # a character the answer never ended
            self._held_logprobs = []
            events.append(
                self._event(
                    "response.output_text.done", self._at(text=text, logprobs=self._logprobs)
                )
            )
            status = "incomplete" if status_of(self._finish)[0] == "incomplete" else "completed"
        else:
            events.append(self._event("response.reasoning_text.done", self._at(text=text)))
            status = "completed"
        events.append(self._event("response.content_part.done", self._at(part=self._part(text))))
        self._done(position, self._text_item(status), events)
        self._item = None
        self._parts = []
        self._logprobs = []

    def _part(self, text: str) -> dict[str, Any]:
        """The open item's content part holding `text`."""
        if self._kind() == "message":
            return output_text(text, self._logprobs)
        return {"type": "reasoning_text", "text": text}

    def _text_item(self, status: str) -> dict[str, Any]:
        """The open item with its text so far, as the whole response shows it."""
        assert self._item is not None
        item, text = self._output[self._item], "".join(self._parts)
        if item["type"] == "message":
            message = self._shell.message_item(text, status, logprobs=self._logprobs)
            return {**message, "id": item["id"]}
        return {**self._shell.reasoning_item(text), "id": item["id"], "status": status}

    def _so_far(self) -> list[dict[str, Any]]:
        """Every item streamed so far, at the output_index it was announced with: those done
        as they were done, the open ones (cut short by the failure) with their text or
        arguments so far and status `incomplete`, never dropped: a client's items by index
        must match the final response's."""
        output = list(self._output)
        if self._item is not None:
            output[self._item] = self._text_item("incomplete")
        if self._live is not None:  # calls still waiting were never announced: none is shown
            index, position = self._live
            arguments = "".join(self._calls[index].fragments)
            output[position] = {**output[position], "arguments": arguments, "status": "incomplete"}
        return output

    def _done(self, position: int, item: dict[str, Any], events: list[bytes]) -> None:
        self._output[position] = item
        events.append(
            self._event("response.output_item.done", {"output_index": position, "item": item})
        )

    def _at(self, **fields: Any) -> dict[str, Any]:
        assert self._item is not None
        ids = {"item_id": self._output[self._item]["id"], "output_index": self._item}
        return {**ids, "content_index": 0, **fields}

    def _event(self, kind: str, fields: dict[str, Any]) -> bytes:
        payload = orjson.dumps({"type": kind, "sequence_number": self._sequence, **fields})
        self._sequence += 1
        return b"event: " + kind.encode() + b"\ndata: " + payload + b"\n\n"
