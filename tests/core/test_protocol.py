"""Request validation: every failure is a 400 that names the parameter."""

from __future__ import annotations

import orjson
import pytest

from core.errors import InvalidJSON, InvalidRequest, UnsupportedParameter
from core.protocol import ChatCompletionRequest, CompletionRequest, EmbeddingRequest
from core.request_parsing import parse_request

CHAT = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


def _chat(**fields: object) -> bytes:
    return orjson.dumps({**CHAT, **fields})


@pytest.mark.parametrize(
    ("fields", "param"),
    [
        ({"temperature": 3}, "temperature"),
        ({"top_p": 0}, "top_p"),
        ({"n": 0}, "n"),
        ({"max_tokens": 0}, "max_tokens"),
        ({"stop": [""]}, "stop"),
        ({"stop": ["a"] * 17}, "stop"),
        ({"logit_bias": {"abc": 1}}, "logit_bias"),
        ({"logit_bias": {"\u00b2": 1}}, "logit_bias"),
        ({"logit_bias": {"\u0661": 1}}, "logit_bias"),  # an Arabic-Indic "1"
        ({"logit_bias": {"5": 200}}, "logit_bias.5"),
        ({"messages": []}, "messages"),
        ({"messages": [{"role": "robot", "content": "x"}]}, "messages[0].role"),
        ({"top_logprobs": 2}, "top_logprobs"),
        ({"top_logprobs": 0}, "top_logprobs"),
        ({"top_logprobs": 0, "logprobs": False}, "top_logprobs"),
        ({"stream_options": {"include_usage": True}}, "stream_options"),
        ({"response_format": {"type": "xml"}}, "response_format.type"),
        ({"seed": 2**63}, "seed"),  # int64, as vLLM (folded into the proto's int32)
        ({"min_tokens": 5, "max_completion_tokens": 2}, "min_tokens"),
        ({"min_tokens": 5, "max_tokens": 4}, "min_tokens"),
        ({"reasoning_effort": "extreme"}, "reasoning_effort"),
        ({"verbosity": "loud"}, "verbosity"),
    ],
)
def test_invalid_chat_fields_name_param(fields: dict[str, object], param: str) -> None:
    """Out-of-range or malformed fields raise InvalidRequest naming the field."""
    with pytest.raises(InvalidRequest) as info:
        parse_request(_chat(**fields), ChatCompletionRequest)
    assert info.value.param == param


@pytest.mark.parametrize(
    ("fields", "param"),
    [({"functions": []}, "functions"), ({"audio": {}}, "audio")],
)
def test_unsupported_fields_are_rejected(fields: dict[str, object], param: str) -> None:
    """Fields the gateway cannot honour are refused, never dropped."""
    with pytest.raises(UnsupportedParameter) as info:
        parse_request(_chat(**fields), ChatCompletionRequest)
    assert info.value.param == param


def test_not_json_and_not_object() -> None:
    """Bodies that are not a JSON object are 400s."""
    with pytest.raises(InvalidJSON):
        parse_request(b"{", ChatCompletionRequest)
    with pytest.raises(InvalidRequest):
        parse_request(b"[1]", ChatCompletionRequest)


@pytest.mark.parametrize(
    "raw", [b'{"model": "m\xff"}', b'{"m": "\xc0\xaf"}', b"\xff\xfe{\x00}\x00"]
)
def test_a_body_that_is_no_utf_8_is_said_to_be(raw: bytes) -> None:
    """Bytes that are no UTF-8 (a stray byte, an overlong form, UTF-16) are a 400 saying so,
    and where, not orjson's words about surrogates."""
    with pytest.raises(InvalidJSON) as refused:
        parse_request(raw, ChatCompletionRequest)
    assert "not valid UTF-8 (byte" in refused.value.message
    assert "surrogates" not in refused.value.message


def test_max_completion_tokens_wins() -> None:
    """max_completion_tokens takes precedence over the deprecated max_tokens."""
    body = parse_request(_chat(max_tokens=5, max_completion_tokens=7), ChatCompletionRequest)
    assert body.max_output_tokens == 7


def test_max_tokens_0_is_for_an_echo_alone() -> None:
    """A text completion may ask for `max_tokens: 0` with `echo` (the prompt alone, as vLLM
    and OpenAI's legacy API serve it); without echo, or in chat, it is a 400 naming it."""
    body = {"model": "m", "prompt": "hi", "max_tokens": 0}
    echo = parse_request(orjson.dumps({**body, "echo": True}), CompletionRequest)
    assert echo.echo_only and echo.max_output_tokens == 0
    assert not parse_request(
        orjson.dumps({**body, "max_tokens": 1, "echo": True}), CompletionRequest
    ).echo_only
    with pytest.raises(InvalidRequest) as info:
        parse_request(orjson.dumps(body), CompletionRequest)
    assert info.value.param == "max_tokens" and "echo" in info.value.message
    with pytest.raises(InvalidRequest) as chat:
        parse_request(_chat(max_tokens=0), ChatCompletionRequest)
    assert chat.value.param == "max_tokens"


def test_completion_prompt_forms() -> None:
    """A completion prompt may be text, token ids, or a one-element list of either."""
    for prompt, expected in [("hi", "hi"), ([1, 2], [1, 2]), (["hi"], "hi"), ([[3]], [3])]:
        body = parse_request(orjson.dumps({"model": "m", "prompt": prompt}), CompletionRequest)
        assert body.single_prompt == expected
        assert body.prompts == [expected] and not body.batched and body.choice_count == 1


@pytest.mark.parametrize(
    ("prompt", "prompts"),
    [(["a", "b", "c"], ["a", "b", "c"]), ([[1, 2], [3]], [[1, 2], [3]])],
    ids=["texts", "token-lists"],
)
def test_a_batch_of_prompts_is_n_choices_for_each(prompt: object, prompts: object) -> None:
    """A list of texts or of token lists is a batch: each prompt gets n choices; it has no
    single prompt to stand for it (a cache key of its first prompt would be a wrong answer)."""
    raw = orjson.dumps({"model": "m", "prompt": prompt, "n": 2})
    body = parse_request(raw, CompletionRequest)
    assert body.prompts == prompts and body.batched
    assert body.choice_count == 2 * len(body.prompts)
    with pytest.raises(ValueError, match="batch"):
        _ = body.single_prompt


@pytest.mark.parametrize(
    "fields",
    [{"prompt": ["x"] * 65}, {"prompt": ["x"] * 64, "n": 3}, {"prompt": [[1]] * 2, "n": 65}],
    ids=["prompts", "choices", "token-lists"],
)
def test_a_batch_over_the_limits_is_a_400_naming_prompt(fields: dict[str, object]) -> None:
    """More than 64 prompts, or more than 128 choices in all (prompts times n, as n alone
    allows), is a 400 naming `prompt`."""
    with pytest.raises(InvalidRequest) as refused:
        parse_request(orjson.dumps({"model": "m", **fields}), CompletionRequest)
    assert refused.value.param == "prompt"


@pytest.mark.parametrize("prompt", [[[], [5, 6]], [[5], []], [[]]])
def test_an_empty_token_list_in_a_batch_is_a_400_naming_prompt(prompt: object) -> None:
    """An empty token list, alone or in a batch, is a 400 naming `prompt`, not a crash."""
    with pytest.raises(InvalidRequest) as refused:
        parse_request(orjson.dumps({"model": "m", "prompt": prompt}), CompletionRequest)
    assert refused.value.param == "prompt"


def test_embedding_dimensions_are_accepted() -> None:
    """`dimensions` is taken (the model server honours it), and null means unset."""
    body = parse_request(
        orjson.dumps({"model": "m", "input": "x", "dimensions": 8}), EmbeddingRequest
    )
    assert body.dimensions == 8
    unset = parse_request(
        orjson.dumps({"model": "m", "input": "x", "dimensions": None}), EmbeddingRequest
    )
    assert unset.dimensions is None


@pytest.mark.parametrize("dimensions", [0, -4, 1.5, "8", True, 2**31])
def test_embedding_dimensions_must_be_a_positive_integer(dimensions: object) -> None:
    """`dimensions` other than a positive integer is a 400 naming it."""
    raw = orjson.dumps({"model": "m", "input": "x", "dimensions": dimensions})
    with pytest.raises(InvalidRequest) as info:
        parse_request(raw, EmbeddingRequest)
    assert info.value.param == "dimensions"


@pytest.mark.parametrize(
    "fields",
    [{"n": None}, {"logprobs": None}, {"stream": None}, {"skip_special_tokens": None}],
)
def test_null_means_the_default(fields: dict[str, object]) -> None:
    """The official client sends null for an unset optional field: the default applies."""
    assert parse_request(_chat(**fields), ChatCompletionRequest) == parse_request(
        _chat(), ChatCompletionRequest
    )
    text = parse_request(
        orjson.dumps({"model": "m", "prompt": "x", "n": None, "echo": None, "stream": None}),
        CompletionRequest,
    )
    assert (text.n, text.echo, text.stream) == (1, False, False)


def test_a_null_for_a_field_not_served_asks_for_nothing() -> None:
    """`"audio": null` from a client forwarding every keyword is no request for audio; the
    same field with a value is still refused, naming it."""
    plain = parse_request(_chat(), ChatCompletionRequest)
    assert parse_request(_chat(audio=None, prediction=None), ChatCompletionRequest) == plain
    with pytest.raises(UnsupportedParameter) as info:
        parse_request(_chat(audio={"voice": "alloy", "format": "mp3"}), ChatCompletionRequest)
    assert info.value.param == "audio"


@pytest.mark.parametrize(
    ("fields", "param"),
    [
        ({"n": "2"}, "n"),
        ({"stream": "true"}, "stream"),
        ({"stream": 1}, "stream"),
        ({"logprobs": "yes"}, "logprobs"),
        ({"temperature": True}, "temperature"),
        ({"temperature": "0.5"}, "temperature"),
        ({"max_tokens": "10"}, "max_tokens"),
        ({"seed": "5"}, "seed"),
    ],
)
def test_values_of_another_type_are_not_converted(fields: dict[str, object], param: str) -> None:
    """A string or a boolean where a number or a boolean belongs is a 400, as at OpenAI."""
    with pytest.raises(InvalidRequest) as caught:
        parse_request(_chat(**fields), ChatCompletionRequest)
    assert caught.value.param == param


def test_integers_are_numbers() -> None:
    """An integer where a float belongs is still a number."""
    body = parse_request(_chat(temperature=1, top_p=1), ChatCompletionRequest)
    assert (body.temperature, body.top_p) == (1.0, 1.0)


def test_stream_obfuscation_is_accepted_and_ignored() -> None:
    """`stream_options.include_obfuscation` (the client's own option) is not a 400."""
    body = parse_request(
        _chat(stream=True, stream_options={"include_usage": True, "include_obfuscation": False}),
        ChatCompletionRequest,
    )
    assert body.include_usage


def test_the_settings_responses_accepts_are_accepted_in_chat() -> None:
    """reasoning_effort, store, prompt_cache_key, safety_identifier and verbosity: the
    settings an agent sends to either API are no 400 in chat."""
    body = parse_request(
        _chat(
            reasoning_effort="low",
            store=True,
            prompt_cache_key="k",
            safety_identifier="s",
            verbosity="low",
        ),
        ChatCompletionRequest,
    )
    assert (body.reasoning_effort, body.verbosity, body.store) == ("low", "low", True)


@pytest.mark.parametrize("schema", [{"type": "objekt"}, {"required": "name"}, {"properties": []}])
def test_a_json_schema_format_must_be_a_json_schema(schema: dict[str, object]) -> None:
    """`response_format.json_schema.schema` that breaks the metaschema is a 400
    `invalid_json_schema` naming it; a valid one passes as it was sent."""

    def fmt(schema: dict[str, object]) -> dict[str, object]:
        return {"type": "json_schema", "json_schema": {"name": "out", "schema": schema}}

    with pytest.raises(InvalidRequest) as caught:
        parse_request(_chat(response_format=fmt(schema)), ChatCompletionRequest)
    assert caught.value.param == "response_format.json_schema.schema"
    assert caught.value.code == "invalid_json_schema"
    valid: dict[str, object] = {"type": "object", "properties": {"a": {"type": "string"}}}
    parsed = parse_request(_chat(response_format=fmt(valid)), ChatCompletionRequest)
    assert parsed.response_format is not None and parsed.response_format.json_schema is not None
    assert parsed.response_format.json_schema.schema_ == valid


def test_modalities_text_is_the_default_and_audio_is_refused() -> None:
    """`modalities: ["text"]` (OpenAI's default, sent by some clients) asks for nothing new;
    audio or no modality at all is a 400 naming `modalities` that says what is served."""
    plain = parse_request(_chat(), ChatCompletionRequest)
    text = parse_request(_chat(modalities=["text"]), ChatCompletionRequest)
    assert text.model_dump(exclude={"modalities"}) == plain.model_dump(exclude={"modalities"})
    with pytest.raises(UnsupportedParameter) as audio:
        parse_request(_chat(modalities=["text", "audio"]), ChatCompletionRequest)
    assert audio.value.param == "modalities" and "audio" in audio.value.message
    assert "text" in audio.value.message
    for wrong, param in (([], "modalities"), (["video"], "modalities[0]"), ("text", "modalities")):
        with pytest.raises(InvalidRequest) as info:
            parse_request(_chat(modalities=wrong), ChatCompletionRequest)
        assert info.value.param == param


def test_a_json_schema_format_needs_its_name() -> None:
    """`response_format.json_schema.name` is required, as OpenAI and vLLM require it: a 400
    naming it, never a name made up here."""
    schema = {"type": "object"}
    with pytest.raises(InvalidRequest) as info:
        parse_request(
            _chat(response_format={"type": "json_schema", "json_schema": {"schema": schema}}),
            ChatCompletionRequest,
        )
    assert info.value.param == "response_format.json_schema.name"
    assert info.value.message == "Missing required parameter: response_format.json_schema.name."


@pytest.mark.parametrize("name", ["a b/c", "", "x" * 65])
def test_a_json_schema_formats_name_is_openais_pattern(name: str) -> None:
    """`response_format.json_schema.name` is 1 to 64 letters, digits, `_` or `-`, as at
    OpenAI and as the Responses API's `text.format.name`: else a 400 naming it."""
    format_ = {"type": "json_schema", "json_schema": {"name": name, "schema": {"type": "object"}}}
    with pytest.raises(InvalidRequest) as info:
        parse_request(_chat(response_format=format_), ChatCompletionRequest)
    assert info.value.param == "response_format.json_schema.name"
    assert info.value.message.startswith("Invalid 'response_format.json_schema.name': string ")
