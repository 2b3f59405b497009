"""The Responses API's objects built from a served answer: the response, its output items
(reasoning, message, function calls) and its usage, in the shapes the official SDK reads."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from core.answers import Choice, Usage
from core.responses_protocol import ResponsesRequest
from gateway.responses.param_names import NO_ITEMS, ParamNames


@dataclass(frozen=True, slots=True)
class ResponseShell:
    """What every rendering of one response repeats: its id, birth and the request's echo."""

    id: str
    created_at: int
    request: ResponsesRequest
    model: str  # the version that answers (GATEWAY_MODEL_ROUTES), else the request's model
    names: ParamNames = NO_ITEMS  # an error's chat parameter as the client named it

    def reasoning_id(self, ordinal: int = 0) -> str:
        return _item_id("rs_", self.id, ordinal)

    def message_id(self, ordinal: int = 0) -> str:
        return _item_id("msg_", self.id, ordinal)

    def call_id(self, index: int) -> str:
        return f"fc_{self.id.removeprefix('resp_')}_{index}"

    def response(
        self,
        status: str,
        output: list[dict[str, Any]],
        usage: Usage | None,
        *,
        incomplete: str | None = None,
        error: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        request = self.request
        text = {"format": {"type": "text"}}
        if request.text is not None:
            text = request.text.model_dump(exclude_none=True, by_alias=True)
        return {
            "id": self.id,
            "object": "response",
            "created_at": self.created_at,
            "status": status,
            "background": False,
            "error": error,
            "incomplete_details": {"reason": incomplete} if incomplete else None,
            "instructions": request.instructions,
            "max_output_tokens": request.max_output_tokens,
            "max_tool_calls": request.max_tool_calls,
            "metadata": request.metadata or {},
            "model": self.model,
            "output": output,
            "parallel_tool_calls": request.parallel_tool_calls is not False,
            "previous_response_id": request.previous_response_id,
            "reasoning": (
                request.reasoning.model_dump(exclude_none=True)
                if request.reasoning is not None
                else {"effort": None, "summary": None}
            ),
            "store": request.store,
            "temperature": request.temperature if request.temperature is not None else 1.0,
            "text": text,
            "tool_choice": request.tool_choice if request.tool_choice is not None else "auto",
            "tools": [{"strict": None, **tool} for tool in request.tools or ()],
            "top_p": request.top_p if request.top_p is not None else 1.0,
            "truncation": request.truncation or "disabled",
            "usage": usage_object(usage) if usage is not None else None,
            "user": request.user,
        }

    def reasoning_item(self, text: str, ordinal: int = 0) -> dict[str, Any]:
        return {
            "type": "reasoning",
            "id": self.reasoning_id(ordinal),
            "summary": [],
            "content": [{"type": "reasoning_text", "text": text}],
            "status": "completed",
        }

    def message_item(
        self,
        text: str,
        status: str = "completed",
        ordinal: int = 0,
        logprobs: list[Any] | None = None,
    ) -> dict[str, Any]:
        """`status` in_progress (no content yet), completed, or incomplete (cut short)."""
        return {
            "type": "message",
            "id": self.message_id(ordinal),
            "status": status,
            "role": "assistant",
            "content": [] if status == "in_progress" else [output_text(text, logprobs)],
        }

    def call_item(
        self, index: int, call_id: str, name: str, arguments: str, status: str = "completed"
    ) -> dict[str, Any]:
        return {
            "type": "function_call",
            "id": self.call_id(index),
            "call_id": call_id,
            "name": name,
            "arguments": arguments,
            "status": status,
        }

    def output(self, choice: Choice) -> list[dict[str, Any]]:
        """A whole answer's output items: reasoning, then text, then calls."""
        items: list[dict[str, Any]] = []
        if choice.reasoning:
            items.append(self.reasoning_item(choice.reasoning))
        cut = status_of(choice.finish_reason)[0] == "incomplete"
        if choice.text or not (choice.tool_calls or cut):
            # Cut before any text, there is no message (as at OpenAI): an empty one would
            # read as the answer.
            status = "incomplete" if cut else "completed"
            logprobs = content_logprobs(choice.logprobs)
            items.append(self.message_item(choice.text, status, logprobs=logprobs))
        for i, call in enumerate((choice.tool_calls or [])[: self.request.max_tool_calls]):
            function = call.get("function") or {}
            items.append(
                self.call_item(
                    i,
                    call.get("id") or self.call_id(i),
                    function.get("name", ""),
                    function.get("arguments") or "{}",
                )
            )
        return items

    def finished(self, choice: Choice, usage: Usage) -> dict[str, Any]:
        """The response of a whole answer."""
        status, incomplete = status_of(choice.finish_reason)
        return self.response(status, self.output(choice), usage, incomplete=incomplete)


def _item_id(prefix: str, response_id: str, ordinal: int) -> str:
    """The first item of a kind is `msg_<id>`, the next `msg_<id>_1`, ...: ids are unique
    within a response, as the official SDK requires of a stream it accumulates."""
    base = prefix + response_id.removeprefix("resp_")
    return base if ordinal == 0 else f"{base}_{ordinal}"


def status_of(finish_reason: str | None) -> tuple[str, str | None]:
    """A chat finish reason as a response status and the reason it is incomplete."""
    if finish_reason == "length":
        return "incomplete", "max_output_tokens"
    if finish_reason == "content_filter":
        return "incomplete", "content_filter"
    return "completed", None


def output_text(text: str, logprobs: list[Any] | None = None) -> dict[str, Any]:
    """An `output_text` part; `logprobs` are its tokens' (chat's `logprobs.content` entries,
    which hold every field of OpenAI's Responses `Logprob`), none unless asked for."""
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": logprobs or []}


def content_logprobs(logprobs: Any) -> list[Any]:
    """The entries of chat logprobs (`{"content": [...]}`), or none."""
    if not isinstance(logprobs, dict):
        return []
    content = logprobs.get("content")
    return content if isinstance(content, list) else []


def usage_object(usage: Usage) -> dict[str, Any]:
    return {
        "input_tokens": usage.prompt_tokens,
        # The SDK requires `cache_write_tokens`; the gateway writes no provider prompt cache.
        "input_tokens_details": {"cached_tokens": usage.cached_tokens, "cache_write_tokens": 0},
        "output_tokens": usage.completion_tokens,
        "output_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
        "total_tokens": usage.total_tokens,
    }
