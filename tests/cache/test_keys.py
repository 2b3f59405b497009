"""Canonical forms and keys: stable where the answer cannot differ, distinct where it can."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from cache.keys import (
    EXCLUDED_FIELDS,
    KEYED_FIELDS,
    KeyContext,
    canonical,
    exact_key,
    semantic_query,
)
from core.protocol import ChatCompletionRequest, CompletionRequest
from core.request_parsing import parse_request

CTX = KeyContext(tenant="t")


def _chat(**fields: Any) -> ChatCompletionRequest:
    body = {"model": "m", "messages": [{"role": "user", "content": "hello there"}], **fields}
    return parse_request(orjson.dumps(body), ChatCompletionRequest)


def test_every_request_field_is_keyed_or_excluded() -> None:
    """A new request field fails this test until it is keyed or deliberately excluded."""
    fields = set(ChatCompletionRequest.model_fields) | set(CompletionRequest.model_fields)
    undecided = fields - KEYED_FIELDS - set(EXCLUDED_FIELDS)
    assert undecided == set()
    assert KEYED_FIELDS.isdisjoint(EXCLUDED_FIELDS)


@given(st.permutations(["model", "messages", "temperature", "seed", "max_tokens"]))
def test_key_order_is_irrelevant(order: list[str]) -> None:
    """JSON key order does not change the key."""
    values: dict[str, Any] = {
        "model": "m",
        "messages": [{"role": "user", "content": "x"}],
        "temperature": 0,
        "seed": 1,
        "max_tokens": 5,
    }
    reordered = {name: values[name] for name in order}
    body = parse_request(orjson.dumps(reordered), ChatCompletionRequest)
    assert exact_key(body, CTX) == exact_key(
        _chat(temperature=0, seed=1, max_tokens=5, messages=[{"role": "user", "content": "x"}]), CTX
    )


def test_a_messages_field_order_and_template_arguments_order_are_irrelevant() -> None:
    """A message's fields and the chat template's arguments are read by name."""
    turned = _chat(messages=[{"content": "hello there", "role": "user"}])
    assert exact_key(turned, CTX) == exact_key(_chat(), CTX)
    kwargs = {"enable_thinking": False, "custom": 1}
    assert exact_key(_chat(chat_template_kwargs=kwargs), CTX) == exact_key(
        _chat(chat_template_kwargs=dict(reversed(kwargs.items()))), CTX
    )


def _tool(properties: dict[str, Any], description_first: bool = False) -> dict[str, Any]:
    function = {"name": "route", "parameters": {"type": "object", "properties": properties}}
    if description_first:
        function = {"description": "Plan a route.", **function}
    else:
        function = {**function, "description": "Plan a route."}
    return {"type": "function", "function": function}


def _schema(properties: dict[str, Any]) -> dict[str, Any]:
    schema = {"type": "object", "properties": properties, "required": sorted(properties)}
    return {"type": "json_schema", "json_schema": {"name": "a", "strict": True, "schema": schema}}


def test_key_order_inside_tools_and_schemas_is_model_input() -> None:
    """A tool's JSON is rendered as sent and constrained decoding writes members in the
    schema's order (`reasoning` before `answer` is another answer): each order is its own key."""
    one, other = {"to": {"type": "string"}}, {"from": {"type": "string"}}
    assert exact_key(_chat(tools=[_tool({**one, **other})]), CTX) != exact_key(
        _chat(tools=[_tool({**other, **one})]), CTX
    )
    assert exact_key(_chat(tools=[_tool(one)]), CTX) != exact_key(
        _chat(tools=[_tool(one, description_first=True)]), CTX
    )
    why, what = {"reasoning": {"type": "string"}}, {"answer": {"type": "string"}}
    first, second = (
        _chat(response_format=_schema({**why, **what})),
        _chat(response_format=_schema({**what, **why})),
    )
    assert exact_key(first, CTX) != exact_key(second, CTX)
    first_query, second_query = semantic_query(first, CTX), semantic_query(second, CTX)
    assert first_query is not None and second_query is not None
    assert first_query.scope != second_query.scope


@given(st.text(alphabet=" \t\n\r", min_size=1, max_size=4))
def test_message_text_is_keyed_verbatim(outer: str) -> None:
    """Whitespace around message text and its kind of line break are model input (a template
    renders them as tokens, an HTTP upstream reads them): each is another key, in every role."""
    plain = exact_key(_chat(), CTX)
    for text in (f"{outer}hello there", f"hello there{outer}"):
        assert exact_key(_chat(messages=[{"role": "user", "content": text}]), CTX) != plain
    crlf = _chat(messages=[{"role": "user", "content": "one\r\ntwo"}])
    lf = _chat(messages=[{"role": "user", "content": "one\ntwo"}])
    assert exact_key(crlf, CTX) != exact_key(lf, CTX)


def test_an_assistant_prefix_is_keyed_verbatim() -> None:
    """A continued assistant message goes on from its last character: "Sure, " and "Sure,"
    are continued differently, so they are different entries."""

    def prefix(text: str) -> ChatCompletionRequest:
        messages = [{"role": "user", "content": "Say hi"}, {"role": "assistant", "content": text}]
        return _chat(messages=messages, continue_final_message=True, add_generation_prompt=False)

    assert exact_key(prefix("Sure, "), CTX) != exact_key(prefix("Sure,"), CTX)


@given(st.sampled_from(["  ", "\t", "\n", "\n    ", " \n"]))
def test_whitespace_inside_message_text_is_kept(inner: str) -> None:
    """Indentation and spacing inside a message change what code means: another key."""
    code = _chat(messages=[{"role": "user", "content": f"Fix this: def f():{inner}return 1"}])
    flat = _chat(messages=[{"role": "user", "content": "Fix this: def f(): return 1"}])
    assert exact_key(code, CTX) != exact_key(flat, CTX)


def test_completion_prompts_are_keyed_verbatim() -> None:
    """A raw prompt's every space is model input (and echoed back): nothing is trimmed."""
    prompts = ["def g():\n    return", "def g(): return", "def g(): return ", " def g(): return"]
    keys = {
        exact_key(parse_request(orjson.dumps({"model": "m", "prompt": p}), CompletionRequest), CTX)
        for p in prompts
    }
    assert len(keys) == len(prompts)


def test_a_batch_is_keyed_by_all_its_prompts() -> None:
    """A batch's canonical form holds every prompt, in order (never its first alone); a
    one-element list keys as the prompt it holds."""

    def key(prompt: Any) -> str:
        raw = orjson.dumps({"model": "m", "prompt": prompt})
        return exact_key(parse_request(raw, CompletionRequest), CTX)

    assert len({key(["a", "b"]), key(["b", "a"]), key("a"), key(["a", "c"])}) == 4
    assert key(["a"]) == key("a") and key([[1, 2]]) == key([1, 2])


def test_explicit_defaults_equal_omitted() -> None:
    """Spelling out a default is the same request as leaving it out."""
    explicit = _chat(
        n=1, presence_penalty=0, frequency_penalty=0, logit_bias={}, stop=[], tools=[],
        response_format={"type": "text"}, skip_special_tokens=True, min_tokens=0,
    )  # fmt: skip
    assert exact_key(explicit, CTX) == exact_key(_chat(), CTX)
    assert exact_key(_chat(top_k=-1), CTX) == exact_key(_chat(top_k=0), CTX)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("temperature", 1.0),
        ("top_p", 1.0),
        ("top_k", -1),
        ("min_p", 0.0),
        ("repetition_penalty", 1.0),
    ],
)
def test_a_sampling_field_left_to_the_model_is_keyed_apart(field: str, value: float) -> None:
    """Omitted, it is sampled with the model's generation_config.json value; sent as the
    neutral value, it is not: two answers, two entries (exact and semantic)."""
    assert exact_key(_chat(**{field: value}), CTX) != exact_key(_chat(), CTX)
    explicit, omitted = semantic_query(_chat(**{field: value}), CTX), semantic_query(_chat(), CTX)
    assert explicit is not None and omitted is not None and explicit.scope != omitted.scope


def test_excluded_fields_do_not_change_key() -> None:
    """user, stream, stream_options, metadata and the hints that are no model input (store,
    prompt_cache_key, safety_identifier) are not part of the key."""
    noisy = _chat(
        user="u1", stream=True, stream_options={"include_usage": True}, metadata={"a": "b"},
        store=True, prompt_cache_key="p", safety_identifier="s",
    )  # fmt: skip
    assert exact_key(noisy, CTX) == exact_key(_chat(), CTX)


def test_reasoning_effort_and_verbosity_change_key() -> None:
    """A template reads the effort and an upstream may honour verbosity: other entries."""
    keys = {
        exact_key(_chat(), CTX),
        exact_key(_chat(reasoning_effort="low"), CTX),
        exact_key(_chat(reasoning_effort="high"), CTX),
        exact_key(_chat(verbosity="low"), CTX),
    }
    assert len(keys) == 4


def test_include_reasoning_false_is_another_entry() -> None:
    """An upstream vLLM leaves the thinking out for include_reasoning false: its answer must
    not serve one that wants the thinking; true is the default, the same entry."""
    assert exact_key(_chat(include_reasoning=True), CTX) == exact_key(_chat(), CTX)
    assert exact_key(_chat(include_reasoning=False), CTX) != exact_key(_chat(), CTX)


def test_sampling_and_context_change_key() -> None:
    """Every sampling field, the model revision, the prompt version and the settings that
    shape answers separate entries (exact and semantic)."""
    base = exact_key(_chat(), CTX)
    variants = [
        _chat(temperature=0), _chat(seed=3), _chat(max_tokens=9), _chat(stop=["x"]),
        _chat(top_p=0.5), _chat(logprobs=True), _chat(response_format={"type": "json_object"}),
        _chat(model="other"),
    ]  # fmt: skip
    keys = {exact_key(v, CTX) for v in variants}
    assert base not in keys and len(keys) == len(variants)
    assert exact_key(_chat(), KeyContext("t", model_revision="r2")) != base
    assert exact_key(_chat(), KeyContext("t", prompt_version="v2")) != base
    assert exact_key(_chat(), KeyContext("t", answer_shape="hermes|none|split|auto|")) != base
    shaped = semantic_query(_chat(), KeyContext("t", answer_shape="x"))
    plain = semantic_query(_chat(), CTX)
    assert shaped is not None and plain is not None and shaped.scope != plain.scope


def test_a_keys_cap_is_keyed_apart_from_the_clients_max_tokens() -> None:
    """max_tokens written in from the API key's cap (a ceiling that gives way near the
    context's end) separates exact entries and semantic scopes from the client's own
    max_tokens of the same value and from another cap; other keys are as they were."""
    capped = _chat(max_tokens=8)
    from_key = KeyContext("t", max_tokens_from_key=True)
    assert exact_key(capped, from_key) != exact_key(capped, CTX)
    assert exact_key(capped, from_key) != exact_key(_chat(), CTX)
    assert exact_key(capped, from_key) != exact_key(_chat(max_tokens=9), from_key)
    assert exact_key(capped, from_key) == exact_key(capped, from_key, canonical(capped, True))
    keyed, asked = semantic_query(capped, from_key), semantic_query(capped, CTX)
    assert keyed is not None and asked is not None and keyed.scope != asked.scope
    assert "key_max_tokens" not in canonical(capped)
    assert canonical(capped, True) == {**canonical(_chat()), "key_max_tokens": 8}


def test_stop_order_is_irrelevant() -> None:
    """Stop sequences are a set."""
    assert exact_key(_chat(stop=["a", "b"]), CTX) == exact_key(_chat(stop=["b", "a"]), CTX)


def test_semantic_scope_ignores_last_user_text_only() -> None:
    """Only the last user message is compared by meaning; everything else scopes it."""
    one = semantic_query(_chat(messages=[{"role": "user", "content": "How do I reset it?"}]), CTX)
    two = semantic_query(_chat(messages=[{"role": "user", "content": "Reset steps?"}]), CTX)
    system = semantic_query(
        _chat(
            messages=[
                {"role": "system", "content": "S"},
                {"role": "user", "content": "Reset steps?"},
            ]
        ),
        CTX,
    )
    assert one is not None and two is not None and system is not None
    assert one.scope == two.scope and one.text != two.text
    assert system.scope != two.scope


def test_semantic_needs_a_last_user_text() -> None:
    """A conversation ending with the assistant has no semantic query."""
    body = _chat(messages=[{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}])
    assert semantic_query(body, CTX) is None


def test_requests_with_tools_have_no_semantic_query() -> None:
    """A call is answered from the exact cache only: a paraphrase never gets another's call."""
    tool = {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}
    assert semantic_query(_chat(tools=[tool]), CTX) is None
    assert semantic_query(_chat(), CTX) is not None


def test_semantic_query_compares_normalized_text() -> None:
    """The semantic cache compares meaning: the last user text is compared with one kind of
    line break, without blank lines or whitespace at its ends."""

    def query(user: str) -> Any:
        return semantic_query(_chat(messages=[{"role": "user", "content": user}]), CTX)

    assert query("How do I reset it?") == query("\r\n\nHow do I reset it?\r\n\n ")


def test_semantic_query_keeps_the_first_lines_indentation() -> None:
    """Leading spaces of the last user text's first line are kept for the verifier's layout
    check: an indented snippet and its first line at the margin are other programs."""
    body = _chat(messages=[{"role": "user", "content": "\n  x = 1\n  y = 2\nWhat is y?"}])
    query = semantic_query(body, CTX)
    assert query is not None and query.text == "  x = 1\n  y = 2\nWhat is y?"


def _scope(messages: list[dict[str, Any]]) -> str:
    query = semantic_query(_chat(messages=[*messages, {"role": "user", "content": "q?"}]), CTX)
    assert query is not None
    return query.scope


_LOOP = ["def f(xs):", "    for x in xs:"]
_YAML = ["Use this config:", "limits:"]


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ([*_LOOP, "        return x"], [*_LOOP, "    return x"]),
        ([*_YAML, "  max_users: 5"], [*_YAML, "max_users: 5"]),
        (["a", "b "], ["a", "b"]),
        (["a"], ["a\n"]),
    ],
)
def test_scope_keeps_every_character_of_text_parts(a: list[str], b: list[str]) -> None:
    """Earlier turns' text parts scope a query verbatim: a part's indentation (a line inside
    or outside a loop, a nested YAML key) or trailing space is model input."""

    def parts(lines: list[str]) -> list[dict[str, str]]:
        return [{"type": "text", "text": line} for line in lines]

    for role in ("system", "user", "assistant"):
        assert _scope([{"role": role, "content": parts(a)}]) != _scope(
            [{"role": role, "content": parts(b)}]
        ), role


@pytest.mark.parametrize(("a", "b"), [("S", " S"), ("S", "S\n\n"), ("S\n", "S\r\n")])
def test_scope_keeps_every_character_of_earlier_messages(a: str, b: str) -> None:
    """An earlier message's whitespace at its ends and its kind of line break are model input
    (a template renders them as tokens, an HTTP upstream reads them): other scopes."""
    assert _scope([{"role": "system", "content": a}]) != _scope([{"role": "system", "content": b}])


def test_echo_and_continued_messages_have_no_semantic_query() -> None:
    """An answer that repeats or continues the request's own wording (a completion's echo, a
    continued final message) never comes from a merely similar request."""
    prompt = {"model": "m", "prompt": "How do I enable 2FA?", "logprobs": 1}
    echo = parse_request(orjson.dumps({**prompt, "echo": True}), CompletionRequest)
    assert semantic_query(echo, CTX) is None
    assert semantic_query(parse_request(orjson.dumps(prompt), CompletionRequest), CTX) is not None
    continued = _chat(continue_final_message=True, add_generation_prompt=False)
    assert semantic_query(continued, CTX) is None


def test_shared_canonical_form_gives_same_results_and_is_not_modified() -> None:
    """Keys built from one precomputed canonical form equal those built from the body."""
    body = _chat(messages=[{"role": "system", "content": "S "}, {"role": "user", "content": "q"}])
    form = canonical(body)
    snapshot = orjson.dumps(form)
    assert exact_key(body, CTX, form) == exact_key(body, CTX)
    assert semantic_query(body, CTX, form) == semantic_query(body, CTX)
    assert orjson.dumps(form) == snapshot


def test_logprobs_keys_are_those_of_content_logprobs() -> None:
    """A chat request with logprobs is keyed as one whose logprobs cover the content alone,
    so an entry whose logprobs held a reasoning model's thinking is never served again; the
    keys of requests without logprobs did not change."""
    asked = canonical(_chat(logprobs=True, top_logprobs=2))
    assert asked["logprobs_of"] == "content"
    assert "logprobs_of" not in canonical(_chat())
