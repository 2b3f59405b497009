"""GenerateRequest reading: the real server's defaults and vLLM's validation."""

from __future__ import annotations

from typing import Any

import pytest
from smg_grpc_proto.generated import vllm_engine_pb2 as pb

from standin.vllm.params import InvalidRequest, UnsupportedRequest, parse_generate
from standin.vllm.served_model import load_model
from standin.vllm.structured import Choice, JsonObject, JsonSchema

VOCAB = load_model().vocab


def request(input_ids: list[int] | None = None, **sampling: Any) -> Any:
    return pb.GenerateRequest(
        request_id="r",
        tokenized=pb.TokenizedInput(input_ids=[5, 6, 7] if input_ids is None else input_ids),
        sampling_params=pb.SamplingParams(**sampling),
    )


def test_unset_fields_take_the_server_defaults() -> None:
    """n 0 -> 1, max_tokens unset -> None, seed unset -> None, logprobs unset -> None."""
    parsed = parse_generate(request(), VOCAB, 4096)
    assert parsed.spec.n == 1
    assert parsed.spec.max_tokens is None
    assert parsed.spec.seed is None
    assert parsed.spec.logprobs is None
    assert parsed.spec.constraint is None
    assert parsed.prompt_ids == [5, 6, 7]


def test_text_input_is_tokenized() -> None:
    """Raw text input becomes the tokenizer's ids."""
    message = pb.GenerateRequest(request_id="r", text="hello world")
    assert parse_generate(message, VOCAB, 4096).prompt_ids == VOCAB.encode("hello world")


def test_truncate_prompt_tokens_keeps_the_tail() -> None:
    """truncate_prompt_tokens keeps the last k prompt tokens."""
    parsed = parse_generate(request([1, 2, 3, 4], truncate_prompt_tokens=2), VOCAB, 4096)
    assert parsed.prompt_ids == [3, 4]


@pytest.mark.parametrize(
    ("message", "fragment"),
    [
        (pb.GenerateRequest(request_id="r"), "needs an input"),
        (request([]), "cannot be empty"),
        (pb.GenerateRequest(request_id="r", text=""), "cannot be empty"),
        (request([5, 99999]), "out of vocabulary"),
        (request(list(range(1, 40))), "longer than the maximum model length"),
        (request(list(range(1, 33))), "no room"),
        (request(temperature=-0.5), "temperature must be non-negative"),
        (request(top_p=1.5), "top_p must be in (0, 1]"),
        (request(min_p=2.0), "min_p"),
        (request(presence_penalty=3.0), "presence_penalty"),
        (request(max_tokens=0), "max_tokens must be at least 1"),
        (request(max_tokens=2, min_tokens=3), "min_tokens must be less than or equal"),
        (request(stop=["ok", ""]), "stop cannot contain an empty string"),
        (request(logprobs=21), "greater than max allowed: 20"),
        (request(logprobs=-1), "greater than max allowed"),
        (request(prompt_logprobs=50), "prompt logprobs"),
        (request(logit_bias={100000: 1.0}), "out-of-vocab"),
        (request(json_schema="{not json"), "Invalid JSON schema"),
        (request(truncate_prompt_tokens=0), "truncate_prompt_tokens"),
    ],
)
def test_invalid_requests_are_refused(message: Any, fragment: str) -> None:
    """Bad requests raise InvalidRequest with a message naming the problem."""
    with pytest.raises(InvalidRequest) as caught:
        parse_generate(message, VOCAB, 32)
    assert fragment in str(caught.value)


def test_zero_top_p_and_unset_temperature_are_valid() -> None:
    """top_p 0 means 1.0 and an unset temperature means 1.0: both accepted."""
    parse_generate(request(top_p=0.0), VOCAB, 4096)


def test_temperature_zero_is_valid() -> None:
    """Greedy sampling is accepted."""
    parse_generate(request(temperature=0.0), VOCAB, 4096)


def test_constraints_are_read() -> None:
    """json_object, json_schema and choice become their constraint objects."""
    assert isinstance(
        parse_generate(request(json_object=True), VOCAB, 99).spec.constraint, JsonObject
    )
    schema = parse_generate(request(json_schema='{"type": "object"}'), VOCAB, 99).spec.constraint
    assert isinstance(schema, JsonSchema)
    choice = pb.ChoiceConstraint(choices=["a", "b"])
    assert parse_generate(request(choice=choice), VOCAB, 99).spec.constraint == Choice(("a", "b"))


def test_regex_constraint_is_unsupported() -> None:
    """A regex constraint is beyond the stand-in."""
    with pytest.raises(UnsupportedRequest):
        parse_generate(request(regex="a+"), VOCAB, 99)
