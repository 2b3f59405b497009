"""A streamed answer as the Responses API's typed events, in the order the official SDK
consumes them: `response.created`, `response.in_progress`, per output item `added`, its
deltas and `done`s, then `response.completed` (or `response.incomplete`, `response.failed`).

Output items open and close as the answer moves from reasoning to text to calls. A call the
gateway parsed arrives whole (its arguments are one delta); a pass-through backend's call
arrives as an id and name, then argument fragments.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from core.answers import ChoiceDelta, StreamChunk, Usage
from core.errors import GatewayError
from gateway.responses.objects import ResponseShell, output_text, status_of

Finished = Callable[[dict[str, Any]], None]  # hears the final response object


class ResponseEvents:
    """Renders the chunks of one response; `close` or `fail` ends it."""

    __slots__ = (
        "_arguments",
        "_calls",
        "_finish",
        "_item",
        "_on_done",
        "_output",
        "_parts",
        "_sequence",
        "_shell",
        "_started",
        "_usage",
    )

    def __init__(self, shell: ResponseShell, on_done: Finished | None = None) -> None:
        self._shell = shell
        self._on_done = on_done
        self._sequence = 0
        self._started = False
        self._output: list[dict[str, Any]] = []  # items done
        self._item: dict[str, Any] | None = None  # the item open now
        self._parts: list[str] = []  # its text so far
        self._arguments: list[str] = []  # an open call's argument fragments
        self._calls = 0
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

    def close(self) -> bytes:
        events: list[bytes] = []
        self._close_item(events)
        status, incomplete = status_of(self._finish)
        response = self._shell.response(status, self._output, self._usage, incomplete=incomplete)
        kind = "response.completed" if status == "completed" else "response.incomplete"
        events.append(self._event(kind, {"response": response}))
        if self._on_done is not None:
            self._on_done(response)
        return b"".join(events)

    def fail(self, error: GatewayError) -> bytes:
        detail = {"code": error.code or error.type, "message": error.public_message}
        failed = self._shell.response("failed", self._output, self._usage, error=detail)
        return self._event("error", {**detail, "param": error.param}) + self._event(
            "response.failed", {"response": failed}
        )

    def _delta(self, delta: ChoiceDelta, events: list[bytes]) -> None:
        if delta.reasoning:
            if self._kind() != "reasoning":
                self._open(self._reasoning_item(), events)
            self._text_delta("response.reasoning_text.delta", delta.reasoning, events)
        if delta.text:
            if self._kind() != "message":
                self._open(self._shell.message_item("", "in_progress"), events)
                events.append(
                    self._event("response.content_part.added", self._at(part=output_text("")))
                )
            self._text_delta("response.output_text.delta", delta.text, events, logprobs=[])
        for call in delta.tool_calls or ():
            self._call(call, events)
        if delta.finish_reason is not None:
            self._finish = delta.finish_reason

    def _call(self, call: dict[str, Any], events: list[bytes]) -> None:
        function = call.get("function") or {}
        arguments = function.get("arguments") or ""
        if call.get("id") is not None or self._kind() != "function_call":
            item = self._shell.call_item(
                self._calls,
                call.get("id") or self._shell.call_id(self._calls),
                function.get("name", ""),
                "",
                "in_progress",
            )
            self._calls += 1
            self._open(item, events)
        if arguments:
            self._arguments.append(arguments)
            events.append(
                self._event(
                    "response.function_call_arguments.delta", {**self._ids(), "delta": arguments}
                )
            )

    def _kind(self) -> str | None:
        return None if self._item is None else str(self._item["type"])

    def _reasoning_item(self) -> dict[str, Any]:
        item = self._shell.reasoning_item("")
        return {**item, "content": [], "status": "in_progress"}

    def _open(self, item: dict[str, Any], events: list[bytes]) -> None:
        self._close_item(events)
        self._item = item
        events.append(
            self._event(
                "response.output_item.added", {"output_index": len(self._output), "item": item}
            )
        )

    def _text_delta(self, kind: str, text: str, events: list[bytes], **extra: Any) -> None:
        self._parts.append(text)
        events.append(self._event(kind, self._at(delta=text, **extra)))

    def _close_item(self, events: list[bytes]) -> None:
        item = self._item
        if item is None:
            return
        kind = item["type"]
        if kind == "message":
            text = "".join(self._parts)
            events.append(
                self._event("response.output_text.done", self._at(text=text, logprobs=[]))
            )
            events.append(
                self._event("response.content_part.done", self._at(part=output_text(text)))
            )
            done = self._shell.message_item(text)
        elif kind == "reasoning":
            text = "".join(self._parts)
            events.append(self._event("response.reasoning_text.done", self._at(text=text)))
            done = self._shell.reasoning_item(text)
        else:
            arguments = "".join(self._arguments) or "{}"
            events.append(
                self._event(
                    "response.function_call_arguments.done",
                    {**self._ids(), "name": item["name"], "arguments": arguments},
                )
            )
            done = {**item, "arguments": arguments, "status": "completed"}
        events.append(
            self._event(
                "response.output_item.done", {"output_index": len(self._output), "item": done}
            )
        )
        self._output.append(done)
        self._item = None
        self._parts = []
        self._arguments = []

    def _ids(self) -> dict[str, Any]:
        assert self._item is not None
        return {"item_id": self._item["id"], "output_index": len(self._output)}

    def _at(self, **fields: Any) -> dict[str, Any]:
        return {**self._ids(), "content_index": 0, **fields}

    def _event(self, kind: str, fields: dict[str, Any]) -> bytes:
        payload = orjson.dumps({"type": kind, "sequence_number": self._sequence, **fields})
        self._sequence += 1
        return b"event: " + kind.encode() + b"\ndata: " + payload + b"\n\n"
