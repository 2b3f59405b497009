"""Chat messages as clients send them back: what each role needs, and the response fields an
assistant message carries when a client appends the previous answer to its history.

The official client's `message.model_dump()` writes `refusal`, `annotations`, `audio` and
`function_call` (mostly null) beside `content`, and a reasoning model's answer carries its
thinking as `reasoning` too (vLLM's new name for `reasoning_content`): a conversation that keeps
its history that way must not fail on its second turn. A refusal is what the assistant said, so
it becomes the content; `reasoning` is `reasoning_content`, as vLLM reads history (it wins where
both are set); annotations (citations) are not model input; audio and the deprecated function
call cannot be replayed to a text model, so a non-null one is a 400 naming it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from core.errors import InvalidRequest, UnsupportedParameter
from core.history_calls import call_ids


class ChatTurn(Protocol):
    """What the role rules read of a message (`core.protocol.ChatMessage` has it)."""

    @property
    def role(self) -> str: ...
    @property
    def content(self) -> str | list[dict[str, Any]] | None: ...
    @property
    def tool_calls(self) -> list[dict[str, Any]] | None: ...
    @property
    def tool_call_id(self) -> str | None: ...
    @property
    def reasoning_content(self) -> str | None: ...


_REPLAYED = ("refusal", "annotations", "audio", "function_call", "reasoning")


def from_history(message: Any, index: int) -> Any:
    """A raw message with the response-only fields of an appended answer resolved."""
    if not isinstance(message, dict) or message.keys().isdisjoint(_REPLAYED):
        return message
    message = dict(message)
    message.pop("annotations", None)
    reasoning = message.pop("reasoning", None)
    if reasoning is not None:
        if not isinstance(reasoning, str):
            raise InvalidRequest(
                "reasoning must be a string.", param=f"messages[{index}].reasoning"
            )
        message["reasoning_content"] = reasoning
    for key in ("audio", "function_call"):
        if message.pop(key, None) is not None:
            raise UnsupportedParameter(
                f"{key} in a message is not supported; send the text as content.",
                param=f"messages[{index}].{key}",
            )
    refusal = message.pop("refusal", None)
    if refusal is not None:
        if message.get("role") != "assistant" or not isinstance(refusal, str):
            raise InvalidRequest(
                "refusal is a string, and only in an assistant message.",
                param=f"messages[{index}].refusal",
            )
        if message.get("content") not in (None, ""):
            raise InvalidRequest(
                "An assistant message carries content or a refusal, not both.",
                param=f"messages[{index}].refusal",
            )
        message["content"] = refusal
    return message


def check_roles(messages: Sequence[ChatTurn]) -> None:
    """Each message has what its role needs (OpenAI's rules), else a 400 naming the field; a
    tool message answers a call an earlier assistant message made, once, and every call is
    answered before the next message of another role (OpenAI refuses a conversation that
    leaves one unanswered)."""
    unanswered: dict[str, int] = {}  # call id -> the index of the message that made the call
    for i, message in enumerate(messages):
        if message.content == []:
            raise InvalidRequest(
                "content must not be an empty list.", param=f"messages[{i}].content"
            )
        if message.role != "tool" and unanswered:
            _unanswered_calls(unanswered)
        if message.role == "assistant":
            if message.content is None and not message.tool_calls and not message.reasoning_content:
                raise InvalidRequest(
                    "An assistant message needs content or tool_calls.",
                    param=f"messages[{i}].content",
                )
            for call_id in call_ids(message.tool_calls or (), f"messages[{i}].tool_calls"):
                unanswered[call_id] = i
            continue
        if message.content is None and message.role != "function":  # its content may be null
            raise InvalidRequest(
                f"Missing required parameter: messages[{i}].content.",
                param=f"messages[{i}].content",
            )
        if message.role != "tool":
            continue
        if message.tool_call_id is None:
            raise InvalidRequest(
                f"Missing required parameter: messages[{i}].tool_call_id.",
                param=f"messages[{i}].tool_call_id",
            )
        if message.tool_call_id not in unanswered:
            raise InvalidRequest(
                f"No tool call found for the tool output with call id {message.tool_call_id!r}: "
                "a tool message answers a call an earlier assistant message made, once.",
                param=f"messages[{i}].tool_call_id",
            )
        del unanswered[message.tool_call_id]


def _unanswered_calls(unanswered: dict[str, int]) -> None:
    """The 400 for calls that no tool message answered before the conversation went on."""
    raise InvalidRequest(
        "An assistant message with 'tool_calls' must be followed by tool messages responding "
        "to each 'tool_call_id'. The following tool_call_ids did not have response messages: "
        + ", ".join(unanswered),
        param=f"messages[{min(unanswered.values())}].tool_calls",
    )
