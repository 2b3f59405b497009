"""A Responses request's fields as the chat request that became it names them, the other way
round: a refusal anywhere downstream (chat validation, a backend, the budgets) names a chat
parameter (`response_format`, `messages[3].tool_call_id`, `max_tokens`), and the client is
told the field it sent (`text.format`, `input[2].call_id`, `max_output_tokens`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TypeVar

from core.errors import GatewayError

E = TypeVar("E", bound=GatewayError)

_MESSAGE_PARAM = re.compile(r"messages\[(\d+)\](.*)")
_OUTPUT_FIELDS = {".tool_call_id": ".call_id", ".content": ".output"}
_RENAMED = {
    "messages": "input",
    "max_tokens": "max_output_tokens",
    "max_completion_tokens": "max_output_tokens",
    "response_format": "text.format",
    "reasoning_effort": "reasoning.effort",
    "verbosity": "text.verbosity",
    "logprobs": "include",
}
# Longest first: `response_format.json_schema.name` is `text.format.name`.
_PREFIXES = (
    ("response_format.json_schema.", "text.format."),
    ("response_format.", "text.format."),
)


@dataclass(frozen=True, slots=True)
class ParamNames:
    """Where each chat message came from: (the item's place, its type), in message order."""

    origins: tuple[tuple[str, str], ...] = ()

    def of(self, param: str | None) -> str | None:
        """The Responses field that a chat parameter came from."""
        if param is None:
            return None
        match = _MESSAGE_PARAM.fullmatch(param)
        if match is not None and int(match[1]) < len(self.origins):
            where, kind = self.origins[int(match[1])]
            rest = match[2]
            if kind == "function_call_output":
                rest = _OUTPUT_FIELDS.get(rest, rest)
            elif kind in ("function_call", "instructions"):
                rest = ""
            return where + rest
        if match is not None:
            return "input"
        if param in _RENAMED:
            return _RENAMED[param]
        for chat, responses in _PREFIXES:
            if param.startswith(chat):
                return responses + param.removeprefix(chat)
        if param.startswith(("tools[", "tool_choice.")):
            return param.replace(".function", "", 1)  # Responses' function tools are flat
        return param

    def renamed(self, exc: E) -> E:
        """`exc` naming the Responses field the client sent: a copy when a name changes, as
        one error object may reach several callers (a coalesced backend call's chat caller
        must keep its chat names)."""
        param = self.of(exc.param)
        if param == exc.param:
            return exc
        twin = exc.twin()
        if exc.param and param:
            twin.message = exc.message.replace(exc.param, param)
        twin.param = param
        return twin


NO_ITEMS = ParamNames()
"""The names of a request whose messages are not known (its top-level fields only)."""
