"""A Responses API request, with the conversation it continues, as the chat completion the
rest of the gateway serves: one pipeline for both APIs.

Items map onto chat messages the way a chat template expects them: consecutive
`function_call` items become one assistant message with several `tool_calls`, a
`function_call_output` a `tool` message, a `reasoning` item the `reasoning_content` of the
assistant message that follows it.
"""

from __future__ import annotations

from typing import Any

from core.errors import InvalidRequest, UnsupportedParameter
from core.protocol import ChatCompletionRequest
from core.request_parsing import validate_request
from core.responses_protocol import ResponsesRequest
from gateway.responses.param_names import ParamNames

_ROLES = frozenset({"system", "developer", "user", "assistant"})
# The text parts each kind of content takes (as OpenAI's: what the model said is output,
# anything else input), and what OpenAI's refusal of another lists.
_INPUT_PARTS = (frozenset({"input_text"}), "'input_text', 'input_image', and 'input_file'")
_OUTPUT_PARTS = (frozenset({"output_text", "refusal"}), "'output_text' and 'refusal'")
_MEDIA_PARTS = frozenset({"input_image", "input_file", "input_audio"})


def input_items(request: ResponsesRequest) -> list[dict[str, Any]]:
    """The request's input as a list of items (a string is one user message)."""
    if isinstance(request.input, str):
        return [{"type": "message", "role": "user", "content": request.input}]
    return list(request.input)


def chat_request(
    request: ResponsesRequest, history: list[dict[str, Any]], items: list[dict[str, Any]]
) -> tuple[ChatCompletionRequest, ParamNames]:
    """The chat completion that answers `request` after the stored `history` items, and how
    its parameters are named in the Responses request (for the errors that name them)."""
    messages: list[dict[str, Any]] = []
    origins: list[tuple[str, str]] = []  # each message's item: where it is, its type
    if request.instructions:
        messages.append({"role": "system", "content": request.instructions})
        origins.append(("instructions", "instructions"))
    answered = _answered([*history, *items])
    messages.extend(_messages(history, "previous_response_id", origins, answered))
    messages.extend(_messages(items, "input", origins, answered))
    body: dict[str, Any] = {
        "model": request.model,
        "messages": messages,
        "stream": request.stream,
    }
    if request.stream:
        body["stream_options"] = {"include_usage": True}
    optional = {
        "max_completion_tokens": request.max_output_tokens,
        "temperature": request.temperature,
        "top_p": request.top_p,
        "parallel_tool_calls": request.parallel_tool_calls,
        "user": request.user,
        "safety_identifier": request.safety_identifier,
        "prompt_cache_key": request.prompt_cache_key,
        "service_tier": request.service_tier,
        "reasoning_effort": request.reasoning.effort if request.reasoning else None,
        "verbosity": request.text.verbosity if request.text else None,
    }
    body.update({key: value for key, value in optional.items() if value is not None})
    if request.logprobs:
        body["logprobs"] = True
        body["top_logprobs"] = request.top_logprobs or 0
    if request.tools:
        body["tools"] = [_chat_tool(tool) for tool in request.tools]
    if request.tool_choice is not None:
        body["tool_choice"] = _chat_tool_choice(request.tool_choice)
    response_format = _response_format(request)
    if response_format is not None:
        body["response_format"] = response_format
    if not messages:
        raise InvalidRequest("The input holds no message to answer.", param="input")
    _refuse_stray_output(history, items)
    unanswered = _unanswered_call([*history, *items])
    if unanswered is not None:  # OpenAI's words, before chat's own refusal of the same
        raise InvalidRequest(f"No tool output found for function call {unanswered}.", param="input")
    names = ParamNames(tuple(origins))
    try:
        chat = validate_request(body, ChatCompletionRequest)
    except InvalidRequest as exc:
        raise names.renamed(exc) from None
    return chat, names


def _messages(
    items: list[dict[str, Any]],
    param: str,
    origins: list[tuple[str, str]],
    answered: frozenset[Any] = frozenset(),
) -> list[dict[str, Any]]:
    """Chat messages of `items`; each one's item (where, type) is appended to `origins`. A call
    a failure cut short (`incomplete`) that no output in `answered` answers was never made:
    the model is not shown it."""
    messages: list[dict[str, Any]] = []
    reasoning: str | None = None
    for i, item in enumerate(items):
        where = f"{param}[{i}]"
        if not isinstance(item, dict):
            raise InvalidRequest("An input item must be an object.", param=where)
        kind = item.get("type", "message")
        if kind == "message":
            role = item.get("role")
            if role not in _ROLES:
                raise InvalidRequest(f"Unknown message role {role!r}.", param=f"{where}.role")
            parts = _OUTPUT_PARTS if role == "assistant" else _INPUT_PARTS
            message: dict[str, Any] = {
                "role": role,
                "content": _text(item.get("content"), where, parts),
            }
            if role == "assistant" and reasoning is not None:
                message["reasoning_content"], reasoning = reasoning, None
            messages.append(message)
            origins.append((where, kind))
        elif kind == "function_call" and _never_made(item, answered):
            continue
        elif kind == "function_call":
            call = {
                "id": _string(item, "call_id", where),
                "type": "function",
                "function": {
                    "name": _string(item, "name", where),
                    "arguments": _arguments(item, where),
                },
            }
            last = messages[-1] if messages else None
            if last is not None and last["role"] == "assistant" and "tool_calls" in last:
                last["tool_calls"].append(call)
            elif last is not None and last["role"] == "assistant" and not last.get("tool_calls"):
                last["tool_calls"] = [call]  # text, then calls: one assistant turn
            else:
                message = {"role": "assistant", "content": None, "tool_calls": [call]}
                if reasoning is not None:
                    message["reasoning_content"], reasoning = reasoning, None
                messages.append(message)
                origins.append((where, kind))
        elif kind == "function_call_output":
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": _string(item, "call_id", where),
                    "content": _text(item.get("output"), where, _INPUT_PARTS, "output"),
                }
            )
            origins.append((where, kind))
        elif kind == "reasoning":
            reasoning = _reasoning_text(item)
        else:
            raise UnsupportedParameter(
                f"Input items of type {kind!r} are not supported.", param=f"{where}.type"
            )
    return messages


def _answered(items: list[dict[str, Any]]) -> frozenset[Any]:
    """The call_ids the outputs among `items` answer."""
    return frozenset(
        item.get("call_id") for item in items if item.get("type") == "function_call_output"
    )


def _never_made(item: dict[str, Any], answered: frozenset[Any]) -> bool:
    return item.get("status") == "incomplete" and item.get("call_id") not in answered


def _refuse_stray_output(history: list[dict[str, Any]], items: list[dict[str, Any]]) -> None:
    """A 400 naming the first output in `items` whose call_id no call before it made: the
    client's own mistake, named before any call left unanswered because of it."""
    made = {item.get("call_id") for item in history if item.get("type") == "function_call"}
    for i, item in enumerate(items):
        kind = item.get("type") if isinstance(item, dict) else None
        if kind == "function_call":
            made.add(item.get("call_id"))
        elif kind == "function_call_output" and item.get("call_id") not in made:
            raise InvalidRequest(
                f"No tool call found for function call output with call_id "
                f"{item.get('call_id')!r}.",
                param=f"input[{i}].call_id",
            )


def _unanswered_call(items: list[dict[str, Any]]) -> str | None:
    """The call_id of the first call that no output after it answers. A call a failure cut
    short (`incomplete`) was never made: it needs none."""
    waiting: dict[Any, None] = {}
    for item in items:
        kind = item.get("type", "message")
        if kind == "function_call" and item.get("status") != "incomplete":
            waiting[item.get("call_id")] = None
        elif kind == "function_call_output":
            waiting.pop(item.get("call_id"), None)
    return next((str(call_id) for call_id in waiting), None)


def _text(
    content: Any, where: str, parts: tuple[frozenset[str], str], field: str = "content"
) -> str:
    """Text content: a string, or text parts of the kinds `parts` allows, joined (images and
    files are refused)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise InvalidRequest(
            f"{field} must be a string or a list of parts.", param=f"{where}.{field}"
        )
    texts = []
    for j, part in enumerate(content):
        kind = part.get("type") if isinstance(part, dict) else None
        allowed, listed = parts
        if kind in _MEDIA_PARTS and parts is _INPUT_PARTS:
            raise UnsupportedParameter(
                f"Content parts of type {kind!r} are not supported; only text is.",
                param=f"{where}.{field}[{j}]",
            )
        if kind not in allowed:
            raise InvalidRequest(
                f"Invalid value: {kind!r}. Supported values are: {listed}.",
                param=f"{where}.{field}[{j}].type",
            )
        text = part.get("text", part.get("refusal"))
        if not isinstance(text, str):
            raise InvalidRequest("A text part needs its text.", param=f"{where}.{field}[{j}]")
        texts.append(text)
    return "\n".join(texts)  # as vLLM joins a chat message's text parts


def _string(item: dict[str, Any], key: str, where: str) -> str:
    value = item.get(key)
    if not isinstance(value, str) or not value:
        raise InvalidRequest(f"Missing required parameter: {where}.{key}.", param=f"{where}.{key}")
    return value


def _arguments(item: dict[str, Any], where: str) -> str:
    """A call's arguments: a string, the JSON a model wrote (or, as some models do, broken
    JSON: a call this gateway answered and stored must be replayable)."""
    arguments = item.get("arguments", "{}")
    if not isinstance(arguments, str):
        raise InvalidRequest("arguments must be a string.", param=f"{where}.arguments")
    return arguments or "{}"


def _reasoning_text(item: dict[str, Any]) -> str:
    parts = item.get("content") or item.get("summary") or []
    return "".join(part.get("text", "") for part in parts if isinstance(part, dict))


def _chat_tool(tool: dict[str, Any]) -> dict[str, Any]:
    function = {
        key: tool[key] for key in ("name", "description", "parameters", "strict") if key in tool
    }
    return {"type": "function", "function": function}


def _chat_tool_choice(choice: str | dict[str, Any]) -> str | dict[str, Any]:
    if isinstance(choice, str):
        return choice
    return {"type": "function", "function": {"name": choice["name"]}}


def _response_format(request: ResponsesRequest) -> dict[str, Any] | None:
    if request.text is None or request.text.format.type == "text":
        return None
    text_format = request.text.format
    if text_format.type == "json_object":
        return {"type": "json_object"}
    schema: dict[str, Any] = {"name": text_format.name, "schema": text_format.schema_}
    if text_format.strict is not None:
        schema["strict"] = text_format.strict
    if text_format.description is not None:
        schema["description"] = text_format.description
    return {"type": "json_schema", "json_schema": schema}
