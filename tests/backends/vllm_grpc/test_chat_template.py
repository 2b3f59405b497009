"""Chat templates render and tokenize exactly like transformers' `apply_chat_template`."""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from transformers import PreTrainedTokenizerFast

from backends.vllm_grpc.chat_messages import message_to_template_dict
from backends.vllm_grpc.chat_template import (
    CompiledChatTemplate,
    compile_chat_template,
    render_chat,
    render_chat_request,
)
from backends.vllm_grpc.tokenizer_store import TokenizerBundle, load_tokenizer_bundle
from core.errors import InvalidRequest, UnsupportedParameter
from core.protocol import ChatCompletionRequest, ChatMessage
from standin.vllm.tokenizer_files import tokenizer_dir

# A Qwen/Llama-3 style template: bos_token, namespace(), loop.first/last, loop controls,
# raise_exception, tojson of tools, content-part loops, reasoning, tool calls, a
# `{% generation %}` block, strip/trim and a chat_template_kwargs switch.
RICH_TEMPLATE = """{{- bos_token }}
{%- set ns = namespace(last_user=-1, system='', text='') %}
{%- for message in messages %}
    {%- if message.role == 'user' %}{%- set ns.last_user = loop.index0 %}{%- endif %}
    {%- if message.role == 'system' and message.content is string %}
        {%- set ns.system = message.content %}
    {%- elif message.role == 'system' %}
        {%- set ns.system = message.content | map(attribute='text') | join('\\n') %}
    {%- endif %}
{%- endfor %}
{%- if tools %}
    {{- '<|im_start|>system\\n' }}
    {%- if ns.system %}{{- ns.system | trim + '\\n\\n' }}{%- endif %}
    {{- '# Tools\\n<tools>' }}
    {%- for tool in tools %}
        {{- '\\n' + tool | tojson }}
    {%- endfor %}
    {{- '\\n</tools><|im_end|>\\n' }}
{%- elif ns.system %}
    {{- '<|im_start|>system\\n' + ns.system | trim + '<|im_end|>\\n' }}
{%- endif %}
{%- for message in messages %}
    {%- if message.role == 'system' %}
        {%- if not loop.first %}
            {{- raise_exception('The system message must come first.') }}
        {%- endif %}
        {%- continue %}
    {%- endif %}
    {%- if message.role not in ['user', 'assistant', 'tool'] %}
        {{- raise_exception('Unknown role: ' + message.role) }}
    {%- endif %}
    {{- '<|im_start|>' + message.role + '\\n' }}
    {%- if message.content is string %}
        {%- set text = message.content %}
    {%- elif message.content is defined %}
        {%- set ns.text = '' %}
        {%- for part in message.content %}
            {%- if part.type == 'text' %}{%- set ns.text = ns.text + part.text %}{%- endif %}
        {%- endfor %}
        {%- set text = ns.text %}
    {%- else %}
        {%- set text = '' %}
    {%- endif %}
    {%- if message.role == 'assistant' %}
        {%- if message.reasoning_content is defined and loop.index0 > ns.last_user %}
            {{- '<think>\\n' + message.reasoning_content.strip() + '\\n</think>\\n\\n' }}
        {%- endif %}
        {% generation %}{{- text | trim }}{% endgeneration %}
        {%- for call in message.tool_calls | default([]) %}
            {{- '\\n<tool_call>\\n' }}
            {{- {'name': call.function.name, 'arguments': call.function.arguments} | tojson }}
            {{- '\\n</tool_call>' }}
        {%- endfor %}
    {%- else %}
        {{- text | trim }}
    {%- endif %}
    {%- if loop.last and message.role == 'assistant' %}{{- eos_token + '\\n' }}
    {%- else %}{{- '<|im_end|>\\n' }}{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\\n' }}
    {%- if enable_thinking is defined and not enable_thinking %}
        {{- '<think>\\n\\n</think>\\n\\n' }}
    {%- endif %}
{%- endif %}"""

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Météo d'une ville 🌦",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]


def msg(role: str, content: str | list[dict[str, Any]] | None = None, **extra: Any) -> ChatMessage:
    """A ChatMessage, built like the request parser builds it."""
    return ChatMessage.model_validate({"role": role, "content": content, **extra})


CONVERSATIONS: dict[str, list[ChatMessage]] = {
    "single": [msg("user", "Hello")],
    "system_multi_turn": [
        msg("system", "You are terse."),
        msg("user", "What is 2+2?"),
        msg("assistant", "4"),
        msg("user", "And 3+3? 🙂"),
    ],
    "unicode": [msg("user", "你好，世界 👨‍👩‍👧 🇯🇵 café naïve  \n")],
    "parts": [msg("user", [{"type": "text", "text": "part one"}, {"type": "text", "text": "two"}])],
    "tools": [
        msg("user", "Weather in Paris?"),
        msg(
            "assistant",
            None,
            tool_calls=[
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                }
            ],
        ),
        msg("tool", "18°C", tool_call_id="call_1"),
        msg("assistant", "It is 18°C.", reasoning_content="  The tool said 18.  "),
    ],
    "ends_with_assistant": [msg("user", "Write a haiku"), msg("assistant", "Autumn moon  ")],
}


def make_rich_dir(root: Path) -> Path:
    """A tokenizer dir: the stand-in's vocabulary with the rich template and AddedToken dicts."""
    directory = root / "rich"
    directory.mkdir()
    shutil.copy(tokenizer_dir() / "tokenizer.json", directory / "tokenizer.json")
    token = {"__type": "AddedToken", "content": "<|endoftext|>", "special": True}
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": token,
        "eos_token": "<|im_end|>",
        "pad_token": None,
        "chat_template": RICH_TEMPLATE,
    }
    (directory / "tokenizer_config.json").write_text(json.dumps(config))
    return directory


@pytest.fixture(scope="module", params=["sim", "rich"])
def pair(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[TokenizerBundle, Any]:
    """Our bundle and transformers' tokenizer for the same directory."""
    if request.param == "sim":
        directory = tokenizer_dir()
    else:
        directory = make_rich_dir(tmp_path_factory.mktemp("tok"))
    return load_tokenizer_bundle(directory), PreTrainedTokenizerFast.from_pretrained(directory)


def hf_render(hf: Any, messages: list[dict[str, Any]], **kwargs: Any) -> tuple[str, list[int]]:
    """transformers' text and ids for the same inputs."""
    text = hf.apply_chat_template(messages, tokenize=False, **kwargs)
    ids = hf.apply_chat_template(messages, tokenize=True, return_dict=False, **kwargs)
    return text, list(ids)


def assert_same_as_hf(
    bundle: TokenizerBundle,
    hf: Any,
    messages: Sequence[ChatMessage],
    *,
    tools: list[dict[str, Any]] | None = None,
    kwargs: Mapping[str, Any] | None = None,
    add_generation_prompt: bool = False,
    continue_final_message: bool = False,
) -> None:
    """Render with both and compare text and token ids (or that both refuse)."""
    template = bundle.chat_template(tools=tools is not None)
    dicts = [
        message_to_template_dict(m, i, template.content_format) for i, m in enumerate(messages)
    ]
    agp, cfm = add_generation_prompt, continue_final_message

    def ours(chat: Sequence[ChatMessage | Mapping[str, Any]]) -> str:
        return render_chat(
            template,
            chat,
            add_generation_prompt=agp,
            continue_final_message=cfm,
            tools=tools,
            extra_kwargs=kwargs,
        )

    try:
        expected = hf_render(
            hf,
            dicts,
            tools=tools,
            add_generation_prompt=agp,
            continue_final_message=cfm,
            **(kwargs or {}),
        )
    except Exception:
        with pytest.raises(InvalidRequest):
            ours(messages)
        return
    text = ours(messages)
    assert (text, bundle.encode(text, add_special_tokens=False)) == expected
    # Plain dicts (already in template form) render the same way.
    assert ours(dicts) == text


@pytest.mark.parametrize("name", sorted(CONVERSATIONS))
@pytest.mark.parametrize("add_generation_prompt", [True, False])
def test_conversations_match_transformers(
    pair: tuple[TokenizerBundle, Any], name: str, add_generation_prompt: bool
) -> None:
    """Text and ids equal transformers' for each conversation, with and without the prompt."""
    bundle, hf = pair
    messages = CONVERSATIONS[name]
    assert_same_as_hf(bundle, hf, messages, add_generation_prompt=add_generation_prompt)


@pytest.mark.parametrize("name", ["ends_with_assistant", "system_multi_turn", "tools"])
def test_continue_final_message_matches_transformers(
    pair: tuple[TokenizerBundle, Any], name: str
) -> None:
    """continue_final_message cuts right after the final message like transformers."""
    bundle, hf = pair
    assert_same_as_hf(bundle, hf, CONVERSATIONS[name], continue_final_message=True)


@pytest.mark.parametrize("kwargs", [None, {"enable_thinking": False}, {"enable_thinking": True}])
def test_tools_and_kwargs_match_transformers(
    pair: tuple[TokenizerBundle, Any], kwargs: dict[str, Any] | None
) -> None:
    """Tools (tojson, non-ASCII kept) and chat_template_kwargs render like transformers."""
    bundle, hf = pair
    messages = CONVERSATIONS["system_multi_turn"]
    assert_same_as_hf(bundle, hf, messages, tools=TOOLS, kwargs=kwargs, add_generation_prompt=True)


PIECES = ["🙂", "👨‍👩‍👧", "你好", " ", "  ", "\n", "{{ x }}", "<|im_end|>", "'", '"', "\\"]
TEXT = st.lists(
    st.text(st.characters(codec="utf-8"), max_size=4) | st.sampled_from(PIECES), max_size=6
).map("".join)
CONTENT = TEXT | st.lists(TEXT.map(lambda t: {"type": "text", "text": t}), max_size=3)


@st.composite
def conversations(draw: st.DrawFn) -> tuple[list[ChatMessage], bool, bool]:
    """An optional system message, then alternating user/assistant turns, plus the flags."""
    messages = [msg("system", draw(CONTENT))] if draw(st.booleans()) else []
    for turn in range(draw(st.integers(1, 5))):
        messages.append(msg("user" if turn % 2 == 0 else "assistant", draw(CONTENT)))
    continue_final = messages[-1].role == "assistant" and draw(st.booleans())
    return messages, not continue_final and draw(st.booleans()), continue_final


@settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=conversations())
def test_random_conversations_match_transformers(
    pair: tuple[TokenizerBundle, Any], case: tuple[list[ChatMessage], bool, bool]
) -> None:
    """Random conversations (unicode, special-token text, parts) match transformers."""
    bundle, hf = pair
    messages, add_generation_prompt, continue_final = case
    assert_same_as_hf(
        bundle,
        hf,
        messages,
        add_generation_prompt=add_generation_prompt,
        continue_final_message=continue_final,
    )


@pytest.fixture(scope="module")
def rich(tmp_path_factory: pytest.TempPathFactory) -> CompiledChatTemplate:
    """The rich template, compiled by our loader."""
    bundle = load_tokenizer_bundle(make_rich_dir(tmp_path_factory.mktemp("rich")))
    return bundle.chat_template(tools=False)


def test_content_format_is_detected_like_vllm(rich: CompiledChatTemplate) -> None:
    """Templates that loop over message content get parts; others get strings."""
    assert rich.content_format == "openai"
    sim = load_tokenizer_bundle(tokenizer_dir()).chat_template(tools=False)
    assert sim.content_format == "string"
    sliced = (
        "{% set rest = messages[1:] %}"
        "{% for m in rest %}{% for c in m['content'] %}{% endfor %}{% endfor %}"
    )
    assert compile_chat_template(sliced).content_format == "openai"
    other = "{% for m in messages %}{% for d in documents %}{{ d.content }}{% endfor %}{% endfor %}"
    assert compile_chat_template(other).content_format == "string"


def test_string_format_joins_text_parts_with_newlines() -> None:
    """For a string-format template, text parts become one string joined by newlines."""
    template = compile_chat_template("{{ messages[0].content }}")
    parts = [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]
    assert render_chat(template, [msg("user", parts)]) == "a\nb"


def test_raise_exception_is_a_400_naming_messages(rich: CompiledChatTemplate) -> None:
    """raise_exception in the template becomes InvalidRequest(param='messages')."""
    with pytest.raises(InvalidRequest, match="Unknown role: developer") as info:
        render_chat(rich, [msg("developer", "hi")])
    assert info.value.param == "messages"
    with pytest.raises(InvalidRequest, match="must come first"):
        render_chat(rich, [msg("user", "hi"), msg("system", "late")])


def test_non_text_part_is_unsupported() -> None:
    """An image part names the offending part in `param`."""
    template = compile_chat_template("{{ messages }}")
    image = [{"type": "image_url", "image_url": {"url": "http://x/y.png"}}]
    with pytest.raises(UnsupportedParameter) as info:
        render_chat(template, [msg("user", "look"), msg("user", image)])
    assert info.value.param == "messages[1].content[0]"
    with pytest.raises(InvalidRequest) as bad_text:
        render_chat(template, [msg("user", [{"type": "text", "text": 3}])])
    assert bad_text.value.param == "messages[0].content[0].text"


def test_an_assistant_refusal_part_is_what_it_said() -> None:
    """An assistant message's refusal part (OpenAI's history shape) is rendered as its text;
    from any other role it is unsupported, naming the part."""
    template = compile_chat_template("{{ messages[1].content }}")
    refusal = [{"type": "refusal", "refusal": "I can't help with that."}]
    assert render_chat(template, [msg("user", "q"), msg("assistant", refusal)]) == (
        "I can't help with that."
    )
    with pytest.raises(UnsupportedParameter) as info:
        render_chat(template, [msg("user", "q"), msg("user", refusal)])
    assert info.value.param == "messages[1].content[0]"


def test_tool_call_arguments_become_objects() -> None:
    """Tool-call arguments JSON strings are parsed; text that is not JSON (a model's broken
    call sent back) is rendered as the string it is, so the conversation can go on."""
    template = compile_chat_template("{{ messages[0].tool_calls[0].function.arguments.city }}")
    call = {
        "id": "c",
        "type": "function",
        "function": {"name": "f", "arguments": '{"city": "Oslo"}'},
    }
    assert render_chat(template, [msg("assistant", tool_calls=[call])]) == "Oslo"
    broken = {**call, "function": {"name": "f", "arguments": "{nope"}}
    raw = compile_chat_template("{{ messages[0].tool_calls[0].function.arguments }}")
    assert render_chat(raw, [msg("assistant", tool_calls=[broken])]) == "{nope"


def test_thinking_reaches_a_template_under_every_name() -> None:
    """A message's thinking is `reasoning`, `reasoning_content` and `thinking` to a template,
    as vLLM passes history (templates read one or another)."""
    template = compile_chat_template(
        "{{ messages[0].reasoning }}|{{ messages[0].reasoning_content }}|{{ messages[0].thinking }}"
    )
    message = msg("assistant", "a", reasoning_content="r")
    assert render_chat(template, [message]) == "r|r|r"


def test_reasoning_effort_is_a_template_variable(tmp_path: Path) -> None:
    """Chat's reasoning_effort reaches the template beside chat_template_kwargs, as vLLM
    passes it."""
    source = "{{ reasoning_effort | default('unset') }}/{{ x | default('-') }}"
    shutil.copy(tokenizer_dir() / "tokenizer.json", tmp_path / "tokenizer.json")
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"chat_template": source}))
    bundle = load_tokenizer_bundle(tmp_path)
    base = {"model": "m", "messages": [{"role": "user", "content": "x"}]}
    plain = ChatCompletionRequest.model_validate(base)
    effort = ChatCompletionRequest.model_validate(
        {**base, "reasoning_effort": "low", "chat_template_kwargs": {"x": 1}}
    )
    assert render_chat_request(bundle, plain) == "unset/-"
    assert render_chat_request(bundle, effort) == "low/1"


def test_template_failures_are_400s() -> None:
    """Type errors, undefined attributes and sandbox violations are InvalidRequest."""
    for source in (
        "{{ messages[0].content + 1 }}",
        "{{ ''.__class__.__mro__[1] }}",
        "{% set ns = namespace(_private=1) %}",
        "{{ messages[9].content.upper() }}",
    ):
        with pytest.raises(InvalidRequest) as info:
            render_chat(compile_chat_template(source), [msg("user", "x")])
        assert info.value.param == "messages"


def test_reserved_kwargs_are_rejected() -> None:
    """chat_template_kwargs cannot override messages or the generation flags."""
    template = compile_chat_template("{{ messages | length }}")
    with pytest.raises(InvalidRequest) as info:
        render_chat(template, [msg("user", "x")], extra_kwargs={"messages": []})
    assert info.value.param == "chat_template_kwargs.messages"


def test_continue_final_message_needs_content(rich: CompiledChatTemplate) -> None:
    """A final message without content cannot be continued."""
    with pytest.raises(InvalidRequest):
        render_chat(rich, [msg("user", "hi"), msg("assistant", None)], continue_final_message=True)
    with pytest.raises(InvalidRequest):
        render_chat(
            rich, [msg("user", "hi")], continue_final_message=True, add_generation_prompt=True
        )


def test_globals_and_filters() -> None:
    """dict(), tojson options, strftime_now and loop controls work as in transformers."""
    source = (
        "{{ dict(b=1, a='é') | tojson }}|{{ {'b': 1, 'a': 2} | tojson(sort_keys=true) }}|"
        "{{ strftime_now('%Y') | length }}|"
        "{% for m in messages %}{% if loop.first %}{% continue %}{% endif %}{{ m.content }}"
        "{% if loop.index == 2 %}{% break %}{% endif %}{% endfor %}"
    )
    out = render_chat(
        compile_chat_template(source), [msg("user", "a"), msg("user", "b"), msg("user", "c")]
    )
    assert out == '{"b": 1, "a": "é"}|{"a": 2, "b": 1}|4|b'


def test_request_uses_tool_use_template_when_tools_are_given(tmp_path: Path) -> None:
    """A model with named templates renders "tool_use" for requests with tools; with
    tool_choice "none" the tools are left out, so the model is not shown what it may not call."""
    shutil.copy(tokenizer_dir() / "tokenizer.json", tmp_path / "tokenizer.json")
    templates = [
        {"name": "default", "template": "plain:{{ messages[0].content }}"},
        {"name": "tool_use", "template": "tools:{{ tools | length }}"},
    ]
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"chat_template": templates}))
    bundle = load_tokenizer_bundle(tmp_path)
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    plain = ChatCompletionRequest.model_validate(body)
    with_tools = ChatCompletionRequest.model_validate({**body, "tools": TOOLS})
    assert render_chat_request(bundle, plain) == "plain:hi"
    assert render_chat_request(bundle, with_tools) == "tools:1"
    no_calls = ChatCompletionRequest.model_validate({**body, "tools": TOOLS, "tool_choice": "none"})
    assert render_chat_request(bundle, no_calls) == "plain:hi"


def test_history_arguments_keep_big_integers() -> None:
    """An integer beyond 64 bits in an earlier call's arguments reaches the prompt as written."""
    template = compile_chat_template("{{ messages[0].tool_calls[0].function.arguments | tojson }}")
    big = "123456789012345678901234567890"
    call = {
        "id": "c",
        "type": "function",
        "function": {"name": "f", "arguments": f'{{"n": {big}}}'},
    }
    assert render_chat(template, [msg("assistant", tool_calls=[call])]) == f'{{"n": {big}}}'
