"""Renders a model's chat template the way Hugging Face's `apply_chat_template` does.

The environment copies transformers' (v5): an immutable sandbox with `trim_blocks`,
`lstrip_blocks`, loop controls, the `{% generation %}` tag, a `tojson` that keeps non-ASCII,
`raise_exception`, `strftime_now`, and the guarded `dict`/`namespace` globals. Rendering
follows its rules too: messages without None fields, reasoning copied to `thinking` and
`reasoning_content`, the special tokens and `chat_template_kwargs` as variables, and
`continue_final_message` cut right after the final message's text. Templates are compiled
once per tokenizer bundle. The prompt is then encoded with add_special_tokens=False, as HF's
`apply_chat_template(tokenize=True)` does. OpenAI messages are mapped by `chat_messages`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NoReturn, Protocol

import jinja2
import jinja2.ext
import jinja2.nodes
import jinja2.parser
from jinja2.runtime import LoopContext
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.utils import Namespace

from backends.vllm_grpc.chat_messages import (
    ContentFormat,
    detect_content_format,
    message_to_template_dict,
)
from core.errors import InvalidRequest
from core.protocol import ChatCompletionRequest, ChatMessage

_CONTINUE_TAG = "CONTINUE_FINAL_MESSAGE_TAG "
_REASONING_FIELDS = ("reasoning_content", "thinking", "reasoning")
_RESERVED_KWARGS = frozenset(
    {"messages", "tools", "documents", "add_generation_prompt", "continue_final_message"}
)


@dataclass(frozen=True, slots=True, eq=False)
class CompiledChatTemplate:
    """A parsed template plus what rendering it needs; build with `compile_chat_template`."""

    source: str
    template: jinja2.Template
    special_tokens: Mapping[str, str]
    content_format: ContentFormat


class ChatTemplateSource(Protocol):
    """Where a request's template comes from (a `TokenizerBundle`)."""

    def chat_template(self, *, tools: bool) -> CompiledChatTemplate: ...


class _TemplateRaised(jinja2.TemplateError):
    """`raise_exception(...)` was called by the template: the message is for the client."""


def _raise_exception(message: str) -> NoReturn:
    raise _TemplateRaised(message)


def _tojson(
    value: Any,
    ensure_ascii: bool = False,
    indent: int | str | None = None,
    separators: tuple[str, str] | None = None,
    sort_keys: bool = False,
) -> str:
    return json.dumps(
        value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys
    )


def _strftime_now(format: str) -> str:
    return datetime.now().strftime(format)


class _TemplateDict:
    """`dict(...)` and `dict.fromkeys(...)` without exposing the type itself."""

    def __call__(self, *args: Any, **kwargs: Any) -> dict[Any, Any]:
        return dict(*args, **kwargs)

    def fromkeys(self, *args: Any) -> dict[Any, Any]:
        return dict.fromkeys(*args)


class _TemplateNamespace(Namespace):
    """`namespace(...)` that refuses underscore-prefixed attributes, like HF's."""

    def __init__(self, /, *args: Any, **kwargs: Any) -> None:
        attrs = dict(*args, **kwargs)
        for name in attrs:
            _check_namespace_name(name)
        super().__init__(attrs)

    def __setitem__(self, name: str, value: Any) -> None:
        _check_namespace_name(name)
        super().__setitem__(name, value)


def _check_namespace_name(name: object) -> None:
    if isinstance(name, str) and name.startswith("_"):
        raise jinja2.exceptions.SecurityError(f"namespace attribute {name!r} is not allowed")


class _GenerationTag(jinja2.ext.Extension):
    """HF's `{% generation %}...{% endgeneration %}` (marks assistant text); renders its body."""

    tags = {"generation"}  # noqa: RUF012 (the attribute jinja2 reads)

    def parse(self, parser: jinja2.parser.Parser) -> jinja2.nodes.Node:
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        call = self.call_method("_body")
        return jinja2.nodes.CallBlock(call, [], [], body).set_lineno(lineno)

    def _body(self, caller: Callable[[], str]) -> str:
        return caller()


_DICT_ATTRIBUTES = frozenset(dir(dict))


class _ChatSandbox(ImmutableSandboxedEnvironment):
    """HF's sandbox, with fast paths for the reads templates do most: `message.role` (a dict
    key that is no dict attribute), `loop.first`, `ns.value`. They return exactly what the
    sandbox returns for these, without its per-read safety checks (about 2x faster)."""

    def getattr(self, obj: Any, attribute: str) -> Any:
        kind = type(obj)
        if kind is dict:
            if attribute not in _DICT_ATTRIBUTES and attribute in obj:
                return obj[attribute]
        elif (kind is LoopContext or kind is _TemplateNamespace) and attribute[:1] != "_":
            try:
                return getattr(obj, attribute)
            except AttributeError:
                pass
        return super().getattr(obj, attribute)


def _environment() -> ImmutableSandboxedEnvironment:
    env = _ChatSandbox(
        trim_blocks=True, lstrip_blocks=True, extensions=[_GenerationTag, jinja2.ext.loopcontrols]
    )
    env.filters["tojson"] = _tojson
    env.globals.update(
        raise_exception=_raise_exception,
        strftime_now=_strftime_now,
        dict=_TemplateDict(),
        namespace=_TemplateNamespace,
    )
    return env


def compile_chat_template(
    source: str, special_tokens: Mapping[str, str] | None = None
) -> CompiledChatTemplate:
    """Parse `source` once; raises jinja2.TemplateSyntaxError for a broken template."""
    env = _environment()
    return CompiledChatTemplate(
        source=source,
        template=env.from_string(source),
        special_tokens=dict(special_tokens or {}),
        content_format=detect_content_format(env.parse(source)),
    )


@dataclass(frozen=True, slots=True)
class ChatInputs:
    """What a template is rendered with: the messages as the template sees them, the tools,
    the other variables; `render_inputs` renders it."""

    template: CompiledChatTemplate
    messages: list[dict[str, Any]]
    tools: list[Any] | None
    documents: Sequence[Mapping[str, Any]] | None
    variables: Mapping[str, Any]
    add_generation_prompt: bool
    continue_final_message: bool
    supplied: frozenset[str] = frozenset()  # the variables the request set (its kwargs)


def chat_request_inputs(source: ChatTemplateSource, body: ChatCompletionRequest) -> ChatInputs:
    """The template inputs of a chat completion request. With `tool_choice: "none"` the tools
    are left out of the prompt (as vLLM's `--exclude-tools-when-tool-choice-none`): a model
    shown them may write a call anyway, and with no parser for it the markup would be the
    answer."""
    tools = body.tools if body.tool_choice != "none" else None
    template = source.chat_template(tools=tools is not None)
    kwargs = body.chat_template_kwargs
    if body.reasoning_effort is not None:  # a template variable, as vLLM passes it
        kwargs = {**(kwargs or {}), "reasoning_effort": body.reasoning_effort}
    return chat_inputs(
        template,
        body.messages,
        add_generation_prompt=body.add_generation_prompt,
        continue_final_message=body.continue_final_message,
        tools=tools,
        extra_kwargs=kwargs,
    )


def render_chat_request(source: ChatTemplateSource, body: ChatCompletionRequest) -> str:
    """The prompt text for a chat completion request."""
    return render_inputs(chat_request_inputs(source, body))


def render_chat(
    template: CompiledChatTemplate,
    messages: Sequence[ChatMessage | Mapping[str, Any]],
    *,
    add_generation_prompt: bool = False,
    continue_final_message: bool = False,
    tools: Sequence[Mapping[str, Any]] | None = None,
    documents: Sequence[Mapping[str, Any]] | None = None,
    extra_kwargs: Mapping[str, Any] | None = None,
) -> str:
    """Render like `apply_chat_template(..., tokenize=False)`; errors are 400s."""
    return render_inputs(
        chat_inputs(
            template,
            messages,
            add_generation_prompt=add_generation_prompt,
            continue_final_message=continue_final_message,
            tools=tools,
            documents=documents,
            extra_kwargs=extra_kwargs,
        )
    )


def chat_inputs(
    template: CompiledChatTemplate,
    messages: Sequence[ChatMessage | Mapping[str, Any]],
    *,
    add_generation_prompt: bool = False,
    continue_final_message: bool = False,
    tools: Sequence[Mapping[str, Any]] | None = None,
    documents: Sequence[Mapping[str, Any]] | None = None,
    extra_kwargs: Mapping[str, Any] | None = None,
) -> ChatInputs:
    """The inputs `render_chat` renders; errors are 400s."""
    if continue_final_message and add_generation_prompt:
        raise InvalidRequest(
            "continue_final_message and add_generation_prompt cannot both be true.",
            param="continue_final_message",
        )
    if not messages:
        raise InvalidRequest("messages must not be empty.", param="messages")
    chat = [
        message_to_template_dict(m, i, template.content_format)
        if isinstance(m, ChatMessage)
        else {k: v for k, v in m.items() if v is not None}
        for i, m in enumerate(messages)
    ]
    chat = [_alias_reasoning(m) for m in chat]
    variables = dict(template.special_tokens)
    for key, value in (extra_kwargs or {}).items():
        if key in _RESERVED_KWARGS:
            raise InvalidRequest(
                f"{key!r} cannot be set through chat_template_kwargs.",
                param=f"chat_template_kwargs.{key}",
            )
        variables[key] = value
    return ChatInputs(
        template,
        chat,
        None if tools is None else list(tools),
        documents,
        variables,
        add_generation_prompt,
        continue_final_message,
        frozenset(extra_kwargs or ()),
    )


def render_inputs(inputs: ChatInputs) -> str:
    """The prompt text of `inputs`; errors are 400s."""
    template = inputs.template
    chat = inputs.messages
    final_text = None
    if inputs.continue_final_message:
        chat = [*chat[:-1], dict(chat[-1])]  # tagged in a copy: inputs may be rendered again
        final_text = _tag_final_message(chat, template.source)
    try:
        rendered = template.template.render(
            inputs.variables,
            messages=chat,
            tools=inputs.tools,
            documents=inputs.documents,
            add_generation_prompt=inputs.add_generation_prompt,
        )
    except _TemplateRaised as exc:
        raise InvalidRequest(str(exc), param="messages") from exc
    except Exception as exc:
        raise InvalidRequest(
            f"The chat template failed on these messages: {exc}", param="messages"
        ) from exc
    return rendered if final_text is None else _cut_after_final_message(rendered, final_text)


def _alias_reasoning(message: dict[str, Any]) -> dict[str, Any]:
    reasoning = next((message[k] for k in _REASONING_FIELDS if message.get(k) is not None), None)
    if reasoning is None:
        return message
    # vLLM gives a history message's thinking to templates as both of its names.
    return {
        "thinking": reasoning,
        **message,
        "reasoning_content": reasoning,
        "reasoning": reasoning,
    }


def _tag_final_message(chat: list[dict[str, Any]], source: str) -> str:
    """Mark the end of the final message's text; returns that text (HF's method)."""
    final = chat[-1]
    content = final.get("content")
    if content is None:
        raise InvalidRequest(
            "continue_final_message needs a final message with content.", param="messages"
        )
    if "content" not in source:
        raise InvalidRequest(
            "This model's chat template cannot continue a final message.",
            param="continue_final_message",
        )
    if isinstance(content, str):
        final["content"] = content + _CONTINUE_TAG
        return content
    parts = list(content)
    for j in range(len(parts) - 1, -1, -1):
        part = parts[j]
        if isinstance(part, Mapping) and isinstance(part.get("text"), str):
            parts[j] = {**part, "text": part["text"] + _CONTINUE_TAG}
            final["content"] = parts
            return str(part["text"])
    raise InvalidRequest("The final message has no text to continue.", param="messages")


def _cut_after_final_message(rendered: str, final_text: str) -> str:
    tag = _CONTINUE_TAG.strip()
    if final_text.strip() not in rendered or tag not in rendered:
        raise InvalidRequest(
            "The chat template drops part of the final message, so it cannot be continued.",
            param="continue_final_message",
        )
    at = rendered.rindex(tag)
    if rendered[at : at + len(_CONTINUE_TAG)] == _CONTINUE_TAG:
        return rendered[:at]
    return rendered[:at].rstrip()
