"""Maps OpenAI chat messages onto the dicts a chat template expects, the way vLLM does.

A template that loops over `message.content` ("openai" format, vLLM's AST rule) gets content
as a list of text parts; any other ("string" format) gets one string, text parts joined with
"\\n". Only text parts are accepted. Tool-call `arguments` JSON strings become objects, which
is what tool-calling templates (and HF's docs) expect. None fields are left out, like HF.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any, Literal

import jinja2.nodes
import orjson

from backends.tool_calls import exact_json
from core.errors import InvalidRequest, UnsupportedParameter
from core.protocol import ChatMessage

ContentFormat = Literal["string", "openai"]


def message_to_template_dict(
    message: ChatMessage, index: int, content_format: ContentFormat
) -> dict[str, Any]:
    """One OpenAI message as the template sees it; None fields are left out."""
    data: dict[str, Any] = {}
    for key, value in message:
        if value is None:
            continue
        if key == "content":
            value = _template_content(value, index, content_format, message.role == "assistant")
        elif key == "tool_calls":
            value = [_template_tool_call(call) for call in value]
        data[key] = value
    return data


def _template_content(
    content: str | list[dict[str, Any]],
    index: int,
    content_format: ContentFormat,
    assistant: bool,
) -> str | list[dict[str, Any]]:
    if isinstance(content, str):
        return content if content_format == "string" else [{"type": "text", "text": content}]
    texts: list[str] = []
    for j, part in enumerate(content):
        kind = part.get("type")
        # An assistant's refusal part (OpenAI's history shape) is what the assistant said.
        field = "refusal" if assistant and kind == "refusal" else "text"
        if kind != field:
            raise UnsupportedParameter(
                f"Content parts of type {kind!r} are not supported; only 'text' is"
                + (" (and 'refusal' in an assistant message)." if not assistant else "."),
                param=f"messages[{index}].content[{j}]",
            )
        text = part.get(field)
        if not isinstance(text, str):
            raise InvalidRequest(
                f"A {field} content part needs a string '{field}'.",
                param=f"messages[{index}].content[{j}].{field}",
            )
        texts.append(text)
    if content_format == "string":
        return "\n".join(texts)
    return [{"type": "text", "text": text} for text in texts]


def _template_tool_call(call: Mapping[str, Any]) -> dict[str, Any]:
    """Templates expect `function.arguments` as an object; OpenAI sends a JSON string. Text
    that is not JSON (a model's own broken call, sent back as history) is rendered as the
    string it is: refusing it would leave that conversation unable to go on."""
    function = call.get("function")
    if not isinstance(function, Mapping):
        return dict(call)
    arguments = function.get("arguments")
    if not arguments:
        arguments = {}
    elif isinstance(arguments, str):
        with contextlib.suppress(orjson.JSONDecodeError):
            arguments = exact_json.loads(arguments)
    return {**call, "function": {**function, "arguments": arguments}}


def detect_content_format(ast: jinja2.nodes.Template) -> ContentFormat:
    """vLLM's rule: "openai" if the template loops over a message's `content`, else "string"."""
    message_vars = _loop_targets(ast, _derived_names(ast, "messages"))
    for loop in ast.find_all(jinja2.nodes.For):
        if any(_accesses(loop.iter, var, "content") for var in message_vars):
            return "openai"
    return "string"


def _derived_names(ast: jinja2.nodes.Template, name: str) -> list[str]:
    """`name` plus every variable assigned from it (or a slice/filter of it), transitively."""
    names = [name]
    for current in names:
        for assign in ast.find_all(jinja2.nodes.Assign):
            target = assign.target
            if (
                isinstance(target, jinja2.nodes.Name)
                and target.name not in names
                and _accesses(assign.node, current)
            ):
                names.append(target.name)
    return names


def _loop_targets(ast: jinja2.nodes.Template, iterables: list[str]) -> list[str]:
    return [
        loop.target.name
        for loop in ast.find_all(jinja2.nodes.For)
        if isinstance(loop.target, jinja2.nodes.Name)
        and any(_accesses(loop.iter, var) for var in iterables)
    ]


def _accesses(node: jinja2.nodes.Node | None, var: str, key: str | None = None) -> bool:
    """Whether `node` is `var` (or `var[key]` / `var.key`), through filters, tests, slices."""
    while isinstance(node, jinja2.nodes.Filter | jinja2.nodes.Test) or (
        isinstance(node, jinja2.nodes.Getitem) and isinstance(node.arg, jinja2.nodes.Slice)
    ):
        node = node.node
    if key is not None:
        if isinstance(node, jinja2.nodes.Getitem):
            arg = node.arg
            if not (isinstance(arg, jinja2.nodes.Const) and arg.value == key):
                return False
        elif not (isinstance(node, jinja2.nodes.Getattr) and node.attr == key):
            return False
        node = node.node
    return isinstance(node, jinja2.nodes.Name) and node.ctx == "load" and node.name == var
