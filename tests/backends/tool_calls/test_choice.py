"""Which parser a request gets: each format recognised from the chat template that shows it
(and none where the template is silent or shows two), or as configured; the request's
function schemas reach the parser."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from backends.tool_calls.choice import (
    FORMATS,
    PARSERS,
    SPECIAL_MARKERS,
    detect_format,
    tool_format,
    tool_parser,
)
from backends.tool_calls.deepseek_v3 import DeepSeekV3Parser
from backends.tool_calls.forced import ForcedCallsParser
from backends.tool_calls.harmony import HarmonyParser
from backends.tool_calls.hermes import HermesParser
from backends.tool_calls.llama3_json import Llama3JsonParser
from backends.tool_calls.mistral import MistralParser
from backends.tool_calls.pythonic import PythonicParser
from backends.tool_calls.qwen3_coder import Qwen3CoderParser
from core.errors import UnsupportedParameter
from core.protocol import ChatCompletionRequest
from core.request_parsing import parse_request
from standin.vllm.chat_templates import CHAT_TEMPLATE
from tests.backends.reasoning.harmony_samples import GPT_OSS_TEMPLATE, WEATHER_CALL

QWEN3_CODER = (
    "{{- '<tools>' }}...For each function call, return:\n<tool_call>\n"
    "<function=example_function_name>\n<parameter=example_parameter_1>\nvalue_1\n"
    "</parameter>\n</function>\n</tool_call>{%- for tool_call in message.tool_calls %}"
    "{{- '<function=' + tool_call.name + '>\\n' }}{{- '<parameter=' + name + '>' }}"
)
QWEN25 = (
    "<tools>{{ tool | tojson }}</tools>\nFor each function call, return a json object within "
    '<tool_call></tool_call> XML tags:\n<tool_call>\n{"name": <function-name>, '
    '"arguments": <args-json-object>}\n</tool_call>'
)
MISTRAL = '{%- for tool_call in message.tool_calls %}{{- "[TOOL_CALLS] [" }}{% endfor %}'
LLAMA31 = '{{- "<|python_tag|>" + tool_call.name + ".call(" }}{{- "<|eom_id|>" }}'
DEEPSEEK_V3 = (
    "{{'<｜Assistant｜><｜tool▁calls▁begin｜><｜tool▁call▁begin｜>' + tool['type'] + "
    "'<｜tool▁sep｜>' + tool['function']['name'] + '\\n' + '```json' + '\\n' + "
    "tool['function']['arguments'] + '\\n' + '```' + '<｜tool▁call▁end｜>'}}"
)
DEEPSEEK_V31 = (
    "{{'<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>'+ tool['function']['name'] + "
    "'<｜tool▁sep｜>' + tool['function']['arguments'] + '<｜tool▁call▁end｜>'}}"
)
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"days": {"type": "integer"}}},
    },
}


def _chat(**fields: Any) -> ChatCompletionRequest:
    payload = {"model": "m", "messages": [{"role": "user", "content": "weather?"}], **fields}
    return parse_request(orjson.dumps(payload), ChatCompletionRequest)


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        (QWEN3_CODER, "qwen3_coder"),
        (QWEN25, "hermes"),
        (CHAT_TEMPLATE, "hermes"),
        (MISTRAL, "mistral"),
        (LLAMA31, "llama3_json"),
        (DEEPSEEK_V3, "deepseek_v3"),
        (DEEPSEEK_V31, "deepseek_v3"),
        (GPT_OSS_TEMPLATE, "harmony"),
        ("<|start|>user<|message|>{{ m }}<|end|><|start|>assistant<|channel|>final", None),
        (GPT_OSS_TEMPLATE + QWEN25, None),
        ("{% for m in messages %}{{ m.content }}{% endfor %}", None),
        ("Write calls as [func_name1(params_name1=params_value1)]", None),
        (QWEN25 + MISTRAL, None),
        ("<tool_call> and <function=name> without parameters", "hermes"),
        ("{{ '<tool_call>' + name }}{{ '<arg_key>' + k + '</arg_key>' }}", None),
    ],
)
def test_detects_a_format_only_where_the_template_shows_one(
    template: str, expected: str | None
) -> None:
    """Qwen3-Coder before Hermes; Harmony where the template writes calls back (`<|call|>`);
    none if silent, if two formats show, or for GLM's calls."""
    assert detect_format(template) == expected


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("hermes", HermesParser),
        ("qwen3_coder", Qwen3CoderParser),
        ("llama3_json", Llama3JsonParser),
        ("mistral", MistralParser),
        ("deepseek_v3", DeepSeekV3Parser),
        ("pythonic", PythonicParser),
        ("harmony", HarmonyParser),
    ],
)
def test_a_configured_format_gets_its_parser(name: str, kind: type) -> None:
    """Every format is registered, and configuring it beats the template."""
    assert name in FORMATS and set(FORMATS) == set(PARSERS)
    assert isinstance(tool_parser(_chat(tools=[WEATHER]), name, QWEN25), kind)


def test_an_unknown_format_is_a_400_listing_the_formats() -> None:
    """A silent template and no configuration: the error names every format."""
    with pytest.raises(UnsupportedParameter) as caught:
        tool_parser(_chat(tools=[WEATHER]), None, "{{ messages }}")
    assert caught.value.param == "tools"
    assert all(name in str(caught.value) for name in FORMATS)


def test_no_tools_or_tool_choice_none_needs_no_parser() -> None:
    """Without tools, or with tool_choice none, the answer is plain text."""
    assert tool_parser(_chat(), None, QWEN25) is None
    assert tool_parser(_chat(tools=[WEATHER], tool_choice="none"), None, "{{ x }}") is None


def test_forced_calls_keep_their_parser() -> None:
    """tool_choice required still reads the engine-constrained JSON."""
    parser = tool_parser(_chat(tools=[WEATHER], tool_choice="required"), "mistral", "")
    assert isinstance(parser, ForcedCallsParser)


def test_the_request_schemas_reach_the_parser() -> None:
    """A Qwen3-Coder call's value is typed by the request's schema for it."""
    parser = tool_parser(_chat(tools=[WEATHER]), None, QWEN3_CODER)
    assert parser is not None
    parsed = parser.feed(
        "<tool_call>\n<function=get_weather>\n<parameter=days>\n4\n</parameter>\n"
        "</function>\n</tool_call>"
    )
    assert [(c.name, c.arguments) for c in parsed.calls] == [("get_weather", '{"days":4}')]


def test_harmony_is_decoded_with_special_tokens_kept() -> None:
    """Harmony's markers are special tokens: its format is among those decoded keeping them."""
    body = _chat(tools=[WEATHER])
    assert tool_format(body, None, GPT_OSS_TEMPLATE) == "harmony"
    assert {"mistral", "harmony"} <= SPECIAL_MARKERS
    parser = tool_parser(body, None, GPT_OSS_TEMPLATE)
    assert isinstance(parser, HarmonyParser)
    parsed = parser.feed(WEATHER_CALL)
    assert [c.name for c in parsed.calls] == ["get_weather"]
