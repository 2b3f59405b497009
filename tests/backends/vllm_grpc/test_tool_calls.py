"""Tool calls over gRPC: the model's text, decoded token by token, becomes content and OpenAI
tool calls (finish reason `tool_calls`), the same whether the ids arrive one by one or at once;
which parser a request gets, and the 400s when none fits."""

from __future__ import annotations

from typing import Any

import jsonschema_rs
import orjson
import pytest

from backends.tool_calls.choice import detect_format, tool_parser
from backends.tool_calls.forced import ForcedCallsParser, forced_schema
from backends.tool_calls.hermes import HermesParser
from backends.vllm_grpc.decoding import DecodeOptions
from backends.vllm_grpc.logprobs import TokenTexts
from backends.vllm_grpc.response_decoder import ResponseDecoder, whole_calls
from backends.vllm_grpc.tokenizer_store import TokenizerBundle, load_tokenizer_bundle
from core.answers import ChoiceDelta
from core.errors import InvalidRequest, UnsupportedParameter
from core.protocol import ChatCompletionRequest
from core.request_parsing import parse_request
from core.schema_refs import reference_problem
from standin.vllm.tokenizer_files import tokenizer_dir

WEATHER = {
    "type": "function",
    "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {}}},
}
OUTPUT = 'Sure. <tool_call>\n{"name": "get_weather", "arguments": {"city": "Köln"}}\n</tool_call>'
QWEN_LIKE = (
    "{% for m in messages %}{{ m.content }}{% endfor %} wrap calls in <tool_call></tool_call>"
)


@pytest.fixture(scope="module")
def bundle() -> TokenizerBundle:
    return load_tokenizer_bundle(tokenizer_dir())


def _chat(**fields: Any) -> ChatCompletionRequest:
    payload = {"model": "m", "messages": [{"role": "user", "content": "weather?"}], **fields}
    return parse_request(orjson.dumps(payload), ChatCompletionRequest)


def _decode(
    bundle: TokenizerBundle, ids: list[int], step: int, finish: str = "stop"
) -> list[ChoiceDelta]:
    options = DecodeOptions(
        skip_special_tokens=True, spaces_between_special_tokens=True, prompt_ids=[]
    )
    decoder = ResponseDecoder(
        bundle, "chat", n=1, stops=[], include_stop_str=False, options=options, echo="",
        token_text=TokenTexts(bundle.tokenizer), tools=lambda: HermesParser(["get_weather"]),
    )  # fmt: skip
    choice = decoder.choices[0]
    deltas = [choice.feed(ids[i : i + step], None) for i in range(0, len(ids), step)]
    return [*deltas, choice.finish(finish)]


@pytest.mark.parametrize("step", [1, 2, 7, 10_000])
def test_call_markup_becomes_a_tool_call(bundle: TokenizerBundle, step: int) -> None:
    """Content before the call, then one call with its id, name and arguments; finish
    `tool_calls`; nothing of the markup, nor the space before it, in the content, whatever
    pieces the text arrives in."""
    ids = bundle.encode(OUTPUT, add_special_tokens=False)
    deltas = _decode(bundle, ids, step)
    content = "".join(d.text for d in deltas)
    calls = whole_calls([call for d in deltas for call in d.tool_calls or ()])
    assert content == "Sure." and deltas[-1].finish_reason == "tool_calls"
    assert len(calls) == 1 and calls[0]["type"] == "function"
    assert calls[0]["id"].startswith("call_")
    assert calls[0]["function"]["name"] == "get_weather"
    assert orjson.loads(calls[0]["function"]["arguments"]) == {"city": "Köln"}


@pytest.mark.parametrize("step", [1, 3, 10_000])
def test_the_line_breaks_around_parallel_calls_are_not_content(
    bundle: TokenizerBundle, step: int
) -> None:
    """Two calls on their own lines: no content at all (a message of "\n" would be an item of
    its own in the Responses API, in another place streamed and not)."""
    call = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "%s"}}\n</tool_call>'
    text = "\n" + call % "Oslo" + "\n" + call % "Rome" + "\n"
    deltas = _decode(bundle, bundle.encode(text, add_special_tokens=False), step)
    assert "".join(d.text for d in deltas) == ""
    assert len(whole_calls([c for d in deltas for c in d.tool_calls or ()])) == 2


def test_a_calls_arguments_stream_as_they_are_written(bundle: TokenizerBundle) -> None:
    """Token by token: the call's index, id, type and name leave before its arguments are
    whole, then the arguments in pieces, each a delta with the call's index only, which add
    up to the model's own arguments text."""
    deltas = _decode(bundle, bundle.encode(OUTPUT, add_special_tokens=False), 1)
    calls = [call for d in deltas for call in d.tool_calls or ()]
    assert calls[0]["id"].startswith("call_") and calls[0]["function"]["name"] == "get_weather"
    assert len(calls) > 3 and all(set(c) == {"index", "function"} for c in calls[1:])
    assert {c["index"] for c in calls} == {0}
    arguments = "".join(c["function"]["arguments"] for c in calls)
    assert arguments == '{"city": "Köln"}'


@pytest.mark.parametrize("step", [1, 10_000])
def test_a_call_cut_by_the_token_limit_is_not_content(bundle: TokenizerBundle, step: int) -> None:
    """Ended by `length` before the call's header could leave: the text before it only, no
    call; ended by the model there, the broken markup is text as before. Ended inside the
    arguments: the call with its arguments so far, finish `length` (as OpenAI ends one)."""
    ids = bundle.encode(OUTPUT[: OUTPUT.index("get_weather")], add_special_tokens=False)
    cut = _decode(bundle, ids, step, "length")
    assert "".join(d.text for d in cut) == "Sure. " and cut[-1].finish_reason == "length"
    assert not any(d.tool_calls for d in cut)
    stopped = _decode(bundle, ids, step, "stop")
    assert "".join(d.text for d in stopped) == OUTPUT[: OUTPUT.index("get_weather")]
    ids = bundle.encode(OUTPUT[: OUTPUT.index("Köln")], add_special_tokens=False)
    cut = _decode(bundle, ids, step, "length")
    assert "".join(d.text for d in cut) == "Sure." and cut[-1].finish_reason == "length"
    calls = whole_calls([c for d in cut for c in d.tool_calls or ()])
    assert [c["function"]["arguments"] for c in calls] == ['{"city": "']


def test_text_keeps_its_own_spaces(bundle: TokenizerBundle) -> None:
    """Without calls, held-back whitespace comes out with the next text or at the end."""
    text = "Line one.\n\nLine  two. "
    deltas = _decode(bundle, bundle.encode(text, add_special_tokens=False), 1)
    assert "".join(d.text for d in deltas) == text


def test_plain_text_stays_text(bundle: TokenizerBundle) -> None:
    """Without call markup the answer is text and ends with `stop`."""
    deltas = _decode(bundle, bundle.encode("It is sunny.", add_special_tokens=False), 1)
    assert "".join(d.text for d in deltas) == "It is sunny."
    assert deltas[-1].finish_reason == "stop" and not any(d.tool_calls for d in deltas)


def test_the_parser_follows_the_request_and_the_template() -> None:
    """No tools or tool_choice none: no parser; a template that shows <tool_call>: hermes."""
    assert detect_format(QWEN_LIKE) == "hermes" and detect_format("{{ messages }}") is None
    assert tool_parser(_chat(), None, QWEN_LIKE) is None
    assert tool_parser(_chat(tools=[WEATHER], tool_choice="none"), None, QWEN_LIKE) is None
    assert isinstance(tool_parser(_chat(tools=[WEATHER]), None, QWEN_LIKE), HermesParser)
    assert isinstance(tool_parser(_chat(tools=[WEATHER]), "hermes", "{{ x }}"), HermesParser)


def test_unknown_format_is_a_400_that_says_what_to_do() -> None:
    """A template that shows no format is a 400 naming the variable that sets one."""
    with pytest.raises(UnsupportedParameter, match="GATEWAY_TOOL_PARSERS") as info:
        tool_parser(_chat(tools=[WEATHER]), None, "{{ messages }}")
    assert info.value.param == "tools"


def test_forced_calls_read_the_constrained_json() -> None:
    """ "required" reads an array of {name, parameters}; a named function its arguments; JSON
    that is not that shape (cut short, say) stays text."""
    required = tool_parser(_chat(tools=[WEATHER], tool_choice="required"), None, "{{ x }}")
    assert isinstance(required, ForcedCallsParser) and required.finish_reason == "tool_calls"
    assert required.feed('[{"name": "get_weather", ').content == ""
    required.feed('"parameters": {"city": "Oslo"}}]')
    (call,) = required.finish().calls
    assert call.name == "get_weather" and orjson.loads(call.arguments) == {"city": "Oslo"}
    named_choice = {"type": "function", "function": {"name": "get_weather"}}
    named = tool_parser(_chat(tools=[WEATHER], tool_choice=named_choice), None, "{{ x }}")
    assert isinstance(named, ForcedCallsParser) and named.finish_reason == "stop"
    named.feed('{"city": "Rome"}')
    assert orjson.loads(named.finish().calls[0].arguments) == {"city": "Rome"}
    cut = tool_parser(_chat(tools=[WEATHER], tool_choice="required"), None, "{{ x }}")
    assert cut is not None
    cut.feed('[{"name": "get_wea')
    assert cut.finish().content == '[{"name": "get_wea'


def test_forced_schemas() -> None:
    """ "required" asks for an array of calls to the tools (one at most without parallel
    calls); a named function for its parameters; an unknown name is a 400."""
    schema = forced_schema(_chat(tools=[WEATHER], tool_choice="required"))
    assert schema is not None and schema["type"] == "array" and schema["minItems"] == 1
    (option,) = schema["items"]["anyOf"]
    assert option["properties"]["name"]["enum"] == ["get_weather"]
    single = forced_schema(
        _chat(tools=[WEATHER], tool_choice="required", parallel_tool_calls=False)
    )
    assert single is not None and single["maxItems"] == 1
    named_choice = {"type": "function", "function": {"name": "get_weather"}}
    assert forced_schema(_chat(tools=[WEATHER], tool_choice=named_choice)) == {
        "type": "object",
        "properties": {},
    }
    with pytest.raises(InvalidRequest) as info:
        forced_schema(
            _chat(tools=[WEATHER], tool_choice={"type": "function", "function": {"name": "x"}})
        )
    assert info.value.param == "tool_choice"


@pytest.mark.parametrize("parameters", [None, {}])
def test_forced_arguments_are_always_an_object(parameters: dict[str, Any] | None) -> None:
    """A tool with no parameters, or `{}`, is still forced to an object (else the engine may
    write a string, which would come back as content, not a call), named or "required"."""
    tool = {"type": "function", "function": {"name": "f", "parameters": parameters}}
    named = forced_schema(
        _chat(tools=[tool], tool_choice={"type": "function", "function": {"name": "f"}})
    )
    assert named == {"type": "object", "properties": {}}
    required = forced_schema(_chat(tools=[tool], tool_choice="required"))
    assert required is not None
    assert required["items"]["anyOf"][0]["properties"]["parameters"] == named


def test_forced_calls_keep_each_tools_definitions_apart() -> None:
    """Under "required" each tool's schema is no longer the root: one with references moves to
    the root's `$defs` under its name, its pointers rebased, so two tools may define one
    `$defs` name differently (vLLM's shared `$defs` would refuse them) and every one resolves."""
    step = {"type": "object", "properties": {"x": {"type": "string"}}}
    steps = {"type": "array", "items": {"$ref": "#/$defs/Step"}}
    plan = {"type": "object", "properties": {"steps": steps}, "$defs": {"Step": step}}
    other = {**plan, "$defs": {"Step": {"type": "integer"}}}
    tools = [
        {"type": "function", "function": {"name": name, "parameters": parameters}}
        for name, parameters in (("plan", plan), ("replan", other))
    ]
    schema = forced_schema(_chat(tools=[WEATHER, *tools], tool_choice="required"))
    assert schema is not None and reference_problem(schema) is None
    weather = {"type": "object", "properties": {}}
    assert schema["items"]["anyOf"][0]["properties"]["parameters"] == weather
    assert schema["items"]["anyOf"][2]["properties"]["parameters"] == {"$ref": "#/$defs/replan"}
    replan = schema["$defs"]["replan"]
    assert replan["properties"]["steps"]["items"] == {"$ref": "#/$defs/replan/$defs/Step"}
    validator = jsonschema_rs.validator_for(schema)
    assert validator.is_valid([{"name": "replan", "parameters": {"steps": [3]}}])
    assert not validator.is_valid([{"name": "plan", "parameters": {"steps": [3]}}])


TREE = {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#"}}}}
V1 = {
    "type": "object",
    "properties": {"p": {"$ref": "#/definitions/P"}},
    "definitions": {"P": {"type": "object", "properties": {"x": {"type": "integer"}}}},
}
POINTER = {
    "type": "object",
    "properties": {"a": {"type": "string"}, "b": {"$ref": "#/properties/a"}},
}
DEFS = {
    "type": "object",
    "properties": {"p": {"$ref": "#/$defs/P"}},
    "$defs": {"P": {"type": "object", "properties": {"x": {"type": "integer"}}}},
}


@pytest.mark.parametrize(
    ("parameters", "good", "bad"),
    [
        (TREE, {"kids": [{"kids": []}]}, {"kids": [[{"name": "tree", "parameters": {}}]]}),
        (V1, {"p": {"x": 1}}, {"p": {"x": "one"}}),
        (POINTER, {"a": "x", "b": "y"}, {"a": "x", "b": 2}),
        (DEFS, {"p": {"x": 1}}, {"p": {"x": "one"}}),
    ],
    ids=["root", "definitions", "properties", "defs"],
)
def test_forced_calls_resolve_each_reference_as_the_tool_did(
    parameters: dict[str, Any], good: dict[str, Any], bad: dict[str, Any]
) -> None:
    """A tool's `#`, `#/definitions/...`, `#/properties/...` and `#/$defs/...` name in the
    "required" schema what they named in the tool: a call valid by the tool passes, one
    invalid by it is refused, beside a tool with no references."""
    tool = {"type": "function", "function": {"name": "t", "parameters": parameters}}
    schema = forced_schema(_chat(tools=[WEATHER, tool], tool_choice="required"))
    assert schema is not None and reference_problem(schema) is None
    validator = jsonschema_rs.validator_for(schema)
    assert jsonschema_rs.validator_for(parameters).is_valid(good)
    assert validator.is_valid([{"name": "t", "parameters": good}])
    assert not validator.is_valid([{"name": "t", "parameters": bad}])
    assert validator.is_valid([{"name": "get_weather", "parameters": {}}])


def _anchored(kind: str, declare: dict[str, Any]) -> dict[str, Any]:
    """Parameters whose `n` refers to the anchor `node`, declared on a definition of `kind`."""
    node = {**declare, "type": kind}
    return {"type": "object", "properties": {"n": {"$ref": "#node"}}, "$defs": {"N": node}}


@pytest.mark.parametrize("keyword", ["$anchor", "$dynamicAnchor"])
def test_forced_calls_keep_each_tools_anchors_apart(keyword: str) -> None:
    """Two tools declaring one anchor name for different schemas: under "required" each
    tool's `#node` still names its own, beside a tool whose anchor nothing refers to, and no
    anchor is declared twice (each is renamed for its tool, as are the references to it)."""
    names = ("ints", "texts", "loose")
    tools = [
        {"type": "function", "function": {"name": name, "parameters": parameters}}
        for name, parameters in zip(
            names,
            (
                _anchored("integer", {keyword: "node"}),
                _anchored("string", {keyword: "node"}),
                {"type": "object", "$defs": {"N": {keyword: "node", "type": "null"}}},
            ),
            strict=True,
        )
    ]
    schema = forced_schema(_chat(tools=[WEATHER, *tools], tool_choice="required"))
    assert schema is not None and reference_problem(schema) is None
    text = orjson.dumps(schema).decode()
    assert '"node"' not in text and '"#node"' not in text
    for name in names:
        assert text.count(f"tool.{name}.node") == (1 if name == "loose" else 2)
    validator = jsonschema_rs.Draft202012Validator(schema)
    assert validator.is_valid([{"name": "ints", "parameters": {"n": 1}}])
    assert not validator.is_valid([{"name": "ints", "parameters": {"n": "one"}}])
    assert validator.is_valid([{"name": "texts", "parameters": {"n": "one"}}])
    assert not validator.is_valid([{"name": "texts", "parameters": {"n": 1}}])


def test_tool_choice_without_tools_is_refused() -> None:
    """tool_choice with no tools is a 400 naming tool_choice, before any RPC (when the request
    is read, for every backend)."""
    with pytest.raises(InvalidRequest) as info:
        _chat(tool_choice="auto")
    assert info.value.param == "tool_choice"


def test_kept_special_tokens_never_show_the_eos(bundle: TokenizerBundle) -> None:
    """Decoding with special tokens kept (Mistral's call marker is one), the end-of-sequence
    token the engine stopped on shows as nothing, as in vLLM."""
    options = DecodeOptions(
        skip_special_tokens=False,
        spaces_between_special_tokens=True,
        prompt_ids=[],
        hidden_ids=frozenset(bundle.eos_token_ids),
    )
    decoder = ResponseDecoder(
        bundle, "chat", n=1, stops=[], include_stop_str=False, options=options, echo="",
        token_text=TokenTexts(bundle.tokenizer),
    )  # fmt: skip
    ids = bundle.encode("<|im_start|>hello", add_special_tokens=False)
    choice = decoder.choices[0]
    text = choice.feed([*ids, bundle.eos_token_ids[0]], None).text + choice.finish("stop").text
    assert text == "<|im_start|>hello"
    assert decoder.total_usage().completion_tokens == len(ids) + 1
