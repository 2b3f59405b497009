"""The stand-in model: deterministic output, finish reasons, stops, constraints, logprobs."""

from __future__ import annotations

import json

import pytest

from standin.vllm.config import SimConfig
from standin.vllm.sampling import SamplingSpec
from standin.vllm.served_model import expected_generation, load_model
from standin.vllm.structured import Choice, JsonObject, JsonSchema

MODEL = load_model()
EOS = MODEL.vocab.eos_id
PROMPT = MODEL.vocab.encode("the quick brown fox")


def test_natural_output_is_configured_length_then_eos() -> None:
    """Unconstrained output is `output_tokens` tokens, then EOS with finish "stop"."""
    gen = expected_generation(PROMPT)
    assert len(gen.token_ids) == 17
    assert gen.token_ids[-1] == EOS
    assert EOS not in gen.token_ids[:-1]
    assert gen.finish_reason == "stop"
    assert gen.matched_token_id == EOS
    assert gen.matched_stop_str is None


def test_output_length_follows_config() -> None:
    """`output_tokens` sets the natural length."""
    gen = expected_generation(PROMPT, config=SimConfig(output_tokens=5))
    assert len(gen.token_ids) == 6


def test_same_inputs_same_output() -> None:
    """Output depends only on prompt, seed and index."""
    assert expected_generation(PROMPT) == expected_generation(list(PROMPT))


def test_seed_index_and_prompt_change_output() -> None:
    """A different seed, choice index or prompt gives different tokens."""
    base = expected_generation(PROMPT).token_ids
    assert expected_generation(PROMPT, SamplingSpec(seed=1)).token_ids != base
    assert expected_generation(PROMPT, index=1).token_ids != base
    assert expected_generation([*PROMPT, 5]).token_ids != base


def test_unset_seed_equals_seed_zero() -> None:
    """An unset seed behaves as seed 0."""
    assert expected_generation(PROMPT, SamplingSpec(seed=0)) == expected_generation(PROMPT)


def test_text_prompt_is_tokenized_without_template() -> None:
    """A text prompt is the same as its token ids."""
    assert expected_generation("the quick brown fox") == expected_generation(PROMPT)


def test_max_tokens_below_natural_finishes_length() -> None:
    """max_tokens under the natural length cuts the output with finish "length"."""
    gen = expected_generation(PROMPT, SamplingSpec(max_tokens=5))
    assert gen.token_ids == expected_generation(PROMPT).token_ids[:5]
    assert gen.finish_reason == "length"
    assert gen.matched_token_id is None


def test_ignore_eos_runs_to_max_tokens() -> None:
    """ignore_eos keeps writing words until max_tokens."""
    gen = expected_generation(PROMPT, SamplingSpec(max_tokens=60, ignore_eos=True))
    assert len(gen.token_ids) == 60
    assert EOS not in gen.token_ids
    assert gen.token_ids[:16] == expected_generation(PROMPT).token_ids[:16]
    assert gen.finish_reason == "length"


def test_unset_max_tokens_runs_to_context_limit() -> None:
    """Without max_tokens an ignore_eos request stops at the context window."""
    config = SimConfig(max_context_length=64)
    gen = expected_generation(PROMPT, SamplingSpec(ignore_eos=True), config=config)
    assert len(gen.token_ids) == 64 - len(PROMPT)
    assert gen.finish_reason == "length"


def test_min_tokens_holds_back_eos() -> None:
    """EOS comes no earlier than min_tokens."""
    gen = expected_generation(PROMPT, SamplingSpec(min_tokens=30))
    assert len(gen.token_ids) == 31
    assert gen.token_ids[-1] == EOS
    assert gen.finish_reason == "stop"


def _stop_case() -> tuple[str, int]:
    """A stop string from the natural text and how many tokens it takes to complete it."""
    base = expected_generation(PROMPT)
    stop = base.text[9:12]
    assert base.text.index(stop) == 9
    needed = next(
        count
        for count in range(1, len(base.token_ids) + 1)
        if stop in MODEL.vocab.decode(base.token_ids[:count])
    )
    return stop, needed


def test_stop_string_keeps_completing_token_and_cuts_text() -> None:
    """Output ids run through the token completing the stop string; text ends before it."""
    stop, needed = _stop_case()
    base = expected_generation(PROMPT)
    gen = expected_generation(PROMPT, SamplingSpec(stop=(stop,)))
    assert gen.token_ids == base.token_ids[:needed]
    assert gen.finish_reason == "stop"
    assert gen.matched_stop_str == stop
    assert gen.matched_token_id is None
    assert gen.text == base.text[:9]


def test_include_stop_str_in_output_keeps_the_stop_string() -> None:
    """include_stop_str_in_output keeps the stop string in the text, not the ids."""
    stop, needed = _stop_case()
    gen = expected_generation(PROMPT, SamplingSpec(stop=(stop,), include_stop_str_in_output=True))
    assert len(gen.token_ids) == needed
    assert gen.text == expected_generation(PROMPT).text[: 9 + len(stop)]


def test_stop_token_id_ends_output_including_it() -> None:
    """A stop token id ends the output; the token is kept and reported."""
    base = expected_generation(PROMPT).token_ids
    stop_id = base[4]
    gen = expected_generation(PROMPT, SamplingSpec(stop_token_ids=(stop_id,)))
    assert gen.token_ids == base[: base.index(stop_id) + 1]
    assert gen.matched_token_id == stop_id
    assert gen.finish_reason == "stop"


def test_min_tokens_masks_stop_tokens() -> None:
    """Before min_tokens a stop token is never written."""
    base = expected_generation(PROMPT).token_ids
    stop_id = base[0]
    gen = expected_generation(PROMPT, SamplingSpec(stop_token_ids=(stop_id,), min_tokens=3))
    assert stop_id not in gen.token_ids[:3]
    assert len(gen.token_ids) >= 3


def test_output_splits_multibyte_characters_across_tokens() -> None:
    """Some outputs carry tokens that are not valid UTF-8 on their own, yet decode cleanly."""
    split = 0
    for seed in range(40):
        gen = expected_generation(PROMPT, SamplingSpec(seed=seed))
        pieces = [MODEL.vocab.token_bytes[token] for token in gen.token_ids[:-1]]
        for piece in pieces:
            try:
                piece.decode("utf-8")
            except UnicodeDecodeError:
                split += 1
        assert "\ufffd" not in gen.text
    assert split > 0


@pytest.mark.parametrize("seed", range(10))
def test_text_matches_the_tokenizer_decoder(seed: int) -> None:
    """The stand-in's byte table decodes exactly like the tokenizers library."""
    gen = expected_generation(PROMPT, SamplingSpec(seed=seed, max_tokens=200, ignore_eos=True))
    whole = expected_generation(PROMPT, SamplingSpec(seed=seed))
    decoded = MODEL.vocab.tokenizer.decode(list(whole.token_ids), skip_special_tokens=True)
    assert whole.text == decoded
    assert gen.text.rstrip("\ufffd") == MODEL.vocab.decode(gen.token_ids)


def test_json_object_constraint_writes_a_json_object() -> None:
    """json_object output parses as an object."""
    gen = expected_generation(PROMPT, SamplingSpec(constraint=JsonObject()))
    assert isinstance(json.loads(gen.text), dict)
    assert gen.finish_reason == "stop"


def test_json_schema_constraint_follows_property_types() -> None:
    """json_schema output has every property with its declared type."""
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "age": {"type": "integer", "minimum": 1, "maximum": 9},
            "score": {"type": "number"},
            "ok": {"type": "boolean"},
            "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1},
            "level": {"enum": ["low", "high"]},
        },
        "required": ["name"],
    }
    value = json.loads(
        expected_generation(PROMPT, SamplingSpec(constraint=JsonSchema(schema))).text
    )
    assert isinstance(value["name"], str)
    assert isinstance(value["age"], int)
    assert 1 <= value["age"] <= 9
    assert isinstance(value["score"], float)
    assert isinstance(value["ok"], bool)
    assert value["tags"]
    assert all(isinstance(tag, str) for tag in value["tags"])
    assert value["level"] in ("low", "high")


def test_choice_constraint_writes_one_choice() -> None:
    """A choice constraint writes exactly one of the choices."""
    gen = expected_generation(PROMPT, SamplingSpec(constraint=Choice(("yes", "no"))))
    assert gen.text in ("yes", "no")


def test_logprobs_list_sampled_token_first() -> None:
    """Each position has a negative logprob and k alternatives led by the sampled token."""
    gen = expected_generation(PROMPT, SamplingSpec(logprobs=3))
    assert gen.logprobs is not None
    assert gen.logprobs.token_ids == gen.token_ids
    for token, value, ids, values in zip(
        gen.token_ids,
        gen.logprobs.values,
        gen.logprobs.top_ids,
        gen.logprobs.top_values,
        strict=True,
    ):
        assert value < 0
        assert len(ids) == 3
        assert len(set(ids)) == 3
        assert ids[0] == token
        assert values[0] == value
        assert list(values) == sorted(values, reverse=True)


def test_logprobs_zero_has_no_alternatives() -> None:
    """logprobs=0 gives each sampled token's logprob only."""
    gen = expected_generation(PROMPT, SamplingSpec(logprobs=0))
    assert gen.logprobs is not None
    assert all(ids == () for ids in gen.logprobs.top_ids)
