"""Renders backend-neutral answers as OpenAI JSON bodies and SSE events."""

from __future__ import annotations

from typing import Any

import orjson

from core.answers import ChoiceDelta, Completion, Endpoint, StreamChunk, Usage
from core.errors import GatewayError

DONE_EVENT = b"data: [DONE]\n\n"


def usage_dict(usage: Usage) -> dict[str, Any]:
    rendered: dict[str, Any] = {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.total_tokens,
        "prompt_tokens_details": {"cached_tokens": usage.cached_tokens},
    }
    if usage.reasoning_tokens:
        rendered["completion_tokens_details"] = {"reasoning_tokens": usage.reasoning_tokens}
    return rendered


def completion_body(
    endpoint: Endpoint,
    completion: Completion,
    *,
    response_id: str,
    created: int,
    model: str,
    fingerprint: str,
    include_reasoning: bool = True,
) -> bytes:
    """The JSON body of a non-streaming chat or text completion. A chat message's content is
    null when none was produced beside calls or thinking (as vLLM and OpenAI answer);
    `include_reasoning` false leaves the thinking out (the usage still counts it, as vLLM)."""
    choices: list[dict[str, Any]] = []
    for choice in completion.choices:
        if endpoint == "chat":
            produced = choice.text or not (choice.tool_calls or choice.reasoning is not None)
            message: dict[str, Any] = {
                "role": "assistant",
                "content": choice.text if produced else None,
            }
            if choice.reasoning is not None and include_reasoning:
                # vLLM renamed reasoning_content to reasoning; clients read either.
                message["reasoning_content"] = message["reasoning"] = choice.reasoning
            if choice.tool_calls:
                message["tool_calls"] = choice.tool_calls
            choices.append(
                {
                    "index": choice.index,
                    "message": message,
                    "logprobs": choice.logprobs,
                    "finish_reason": choice.finish_reason,
                }
            )
        else:
            choices.append(
                {
                    "index": choice.index,
                    "text": choice.text,
                    "logprobs": choice.logprobs,
                    "finish_reason": choice.finish_reason,
                }
            )
    return orjson.dumps(
        {
            "id": response_id,
            "object": "chat.completion" if endpoint == "chat" else "text_completion",
            "created": created,
            "model": model,
            "system_fingerprint": completion.system_fingerprint or fingerprint,
            "choices": choices,
            "usage": usage_dict(completion.usage),
        }
    )


def error_event(payload: bytes) -> bytes:
    return b"data: " + payload + b"\n\n"


class ChunkRenderer:
    """Turns the stream chunks of one response into SSE events.

    The envelope (id, object, created, model, fingerprint) is serialized once per
    response, and again only if a chunk brings the upstream's own fingerprint (which then
    replaces the gateway's default, as in a whole answer); each event only serializes its
    own choice.
    """

    __slots__ = (
        "_endpoint",
        "_envelope",
        "_fingerprint",
        "_head",
        "_include_reasoning",
        "_include_usage",
        "_role_sent",
        "_undecided",
        "_usage_tail",
    )

    def __init__(
        self,
        endpoint: Endpoint,
        *,
        response_id: str,
        created: int,
        model: str,
        fingerprint: str,
        include_usage: bool,
        include_reasoning: bool = True,
    ) -> None:
        self._endpoint = endpoint
        self._include_reasoning = include_reasoning  # false: thinking deltas are not sent
        self._envelope: dict[str, Any] = {
            "id": response_id,
            "object": "chat.completion.chunk" if endpoint == "chat" else "text_completion",
            "created": created,
            "model": model,
        }
        self._head = b""
        self._fingerprint = ""
        self._stamp(fingerprint)
        self._usage_tail = b'],"usage":null}\n\n' if include_usage else b"]}\n\n"
        self._include_usage = include_usage
        self._role_sent: set[int] = set()
        self._undecided: set[int] = set()  # choices whose first event had logprobs alone

    def render(self, chunk: StreamChunk) -> bytes:
        fingerprint = chunk.system_fingerprint
        if fingerprint is not None and fingerprint != self._fingerprint:
            self._stamp(fingerprint)
        events = [self._choice_event(delta) for delta in self._split_calls(chunk.deltas)]
        if chunk.usage is not None and self._include_usage:
            events.append(
                self._head + b'],"usage":' + orjson.dumps(usage_dict(chunk.usage)) + b"}\n\n"
            )
        return b"".join(e for e in events if e)

    async def close(self) -> bytes:
        """The end of a stream that ended well."""
        return DONE_EVENT

    def _stamp(self, fingerprint: str) -> None:
        """Every event from here on shows `fingerprint`."""
        self._fingerprint = fingerprint
        envelope = orjson.dumps({**self._envelope, "system_fingerprint": fingerprint})
        self._head = b"data: " + envelope[:-1] + b',"choices":['

    async def fail(self, error: GatewayError) -> bytes:
        """The end of a stream that failed after its first byte: an error event, then done."""
        return error_event(error.to_json()) + DONE_EVENT

    def _says(self, delta: ChoiceDelta) -> bool:
        return bool(
            delta.text
            or (delta.reasoning and self._include_reasoning)
            or delta.tool_calls
            or delta.logprobs is not None
            or delta.finish_reason is not None
        )

    def _first_content(self, delta: ChoiceDelta, body: dict[str, Any]) -> None:
        """A choice's first `content`, as OpenAI's first delta has it: "" before text, null
        before calls, and here before thinking, so that the message the client accumulates
        has the whole answer's content. Before a delta that tells (logprobs alone), none."""
        if delta.text:
            body["content"] = delta.text
        elif delta.tool_calls or delta.reasoning or delta.thought:
            body["content"] = None
            if delta.thought and not delta.reasoning and self._include_reasoning:
                body["reasoning_content"] = body["reasoning"] = ""  # thinking that said nothing
        elif delta.finish_reason is None:
            self._undecided.add(delta.index)
            return
        else:
            body["content"] = ""
        self._undecided.discard(delta.index)

    def _split_calls(self, deltas: list[ChoiceDelta]) -> list[ChoiceDelta]:
        """OpenAI's shape for a streamed call: a delta with its index, id, type, name and empty
        arguments, then the arguments. A whole call becomes those two deltas."""
        if self._endpoint != "chat" or not any(delta.tool_calls for delta in deltas):
            return deltas
        split: list[ChoiceDelta] = []
        for delta in deltas:
            if not delta.tool_calls or not any(_is_whole(call) for call in delta.tool_calls):
                split.append(delta)
                continue
            if delta.text or delta.reasoning or delta.logprobs is not None:
                split.append(
                    ChoiceDelta(
                        delta.index, delta.text, None, delta.logprobs, reasoning=delta.reasoning
                    )
                )
            for call in delta.tool_calls:
                if not _is_whole(call):
                    split.append(ChoiceDelta(delta.index, tool_calls=[call]))
                    continue
                function = call["function"]
                head = {**call, "function": {"name": function["name"], "arguments": ""}}
                split.append(ChoiceDelta(delta.index, tool_calls=[head]))
                arguments = {
                    "index": call["index"],
                    "function": {"arguments": function["arguments"]},
                }
                split.append(ChoiceDelta(delta.index, tool_calls=[arguments]))
            if delta.finish_reason is not None:
                split.append(
                    ChoiceDelta(
                        delta.index, finish_reason=delta.finish_reason, thought=delta.thought
                    )
                )
        return split

    def _choice_event(self, delta: ChoiceDelta) -> bytes:
        if self._endpoint == "chat":
            body: dict[str, Any] = {}
            if delta.index not in self._role_sent:
                if not self._says(delta):
                    return b""  # the role goes with the first delta that says something
                self._role_sent.add(delta.index)
                body["role"] = "assistant"
                self._first_content(delta, body)
            elif self._undecided and delta.index in self._undecided:
                self._first_content(delta, body)
            elif delta.text:
                body["content"] = delta.text
            if delta.reasoning and self._include_reasoning:
                body["reasoning_content"] = body["reasoning"] = delta.reasoning
            if delta.tool_calls:
                body["tool_calls"] = delta.tool_calls
            if not body and delta.finish_reason is None and delta.logprobs is None:
                return b""
            choice: dict[str, Any] = {
                "index": delta.index,
                "delta": body,
                "logprobs": delta.logprobs,
                "finish_reason": delta.finish_reason,
            }
        else:
            if not delta.text and delta.finish_reason is None and delta.logprobs is None:
                return b""
            choice = {
                "index": delta.index,
                "text": delta.text,
                "logprobs": delta.logprobs,
                "finish_reason": delta.finish_reason,
            }
        return self._head + orjson.dumps(choice) + self._usage_tail


def _is_whole(call: Any) -> bool:
    """A call delta carrying its name and its arguments at once."""
    function = call.get("function") if isinstance(call, dict) else None
    return (
        isinstance(function, dict)
        and "id" in call
        and isinstance(function.get("name"), str)
        and bool(function.get("arguments"))
    )
