"""The model's generation_config.json sampling values are the defaults for the fields a request
omits (vLLM's `--generation-config auto`); the request's own values win."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest

from backends.base import GenerationRequest
from backends.vllm_grpc.request_builder import ModelFacts, prepare
from backends.vllm_grpc.sampling_defaults import NO_DEFAULTS, SamplingDefaults, sampling_defaults
from backends.vllm_grpc.tokenizer_store import load_tokenizer_bundle
from core.protocol import ChatCompletionRequest, CompletionRequest
from core.request_parsing import parse_request
from standin.vllm.tokenizer_files import tokenizer_dir

FACTS = ModelFacts("sim", max_context_length=4096, vocab_size=1300)
QWEN_LIKE = {
    "eos_token_id": 2,
    "do_sample": True,
    "temperature": 0.7,
    "top_p": 0.8,
    "top_k": 20,
    "repetition_penalty": 1.05,
}


@pytest.fixture
def model_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "model"
    shutil.copytree(tokenizer_dir(), directory)
    (directory / "generation_config.json").write_text(json.dumps(QWEN_LIKE))
    return directory


def _sampling(directory: Path, generation_config: bool = True, **fields: Any) -> Any:
    bundle = load_tokenizer_bundle(directory, generation_config=generation_config)
    payload = {"model": "sim", "messages": [{"role": "user", "content": "hi"}], **fields}
    body = parse_request(orjson.dumps(payload), ChatCompletionRequest)
    return prepare(GenerationRequest("chat", body, b"", "r1"), bundle, FACTS, "r1").message


def test_omitted_fields_get_the_models_defaults(model_dir: Path) -> None:
    """The probe's request, without sampling fields, samples as the model recommends."""
    params = _sampling(model_dir).sampling_params
    assert params.temperature == pytest.approx(0.7) and params.top_p == pytest.approx(0.8)
    assert params.top_k == 20 and params.repetition_penalty == pytest.approx(1.05)
    assert params.min_p == 0.0


def test_the_requests_values_win(model_dir: Path) -> None:
    """A field the request sets, zero included, is the request's."""
    params = _sampling(
        model_dir, temperature=0, top_p=1, top_k=-1, repetition_penalty=1, min_p=0.1
    ).sampling_params
    assert params.temperature == 0.0 and params.top_p == 1.0 and params.top_k == 0
    assert params.repetition_penalty == 1.0 and params.min_p == pytest.approx(0.1)


def test_completions_get_them_too(model_dir: Path) -> None:
    """Text completions take the same defaults, as vLLM's do."""
    bundle = load_tokenizer_bundle(model_dir)
    body = parse_request(orjson.dumps({"model": "sim", "prompt": "hi"}), CompletionRequest)
    message = prepare(GenerationRequest("completion", body, b"", "r1"), bundle, FACTS, "r1")
    assert message.message.sampling_params.top_k == 20


def test_off_samples_with_the_neutral_values(model_dir: Path) -> None:
    """generation_config=False (GATEWAY_GENERATION_CONFIG=vllm): vLLM's own neutral values."""
    params = _sampling(model_dir, generation_config=False).sampling_params
    assert params.temperature == 1.0 and params.top_p == 1.0 and params.top_k == 0
    assert params.repetition_penalty == 1.0


def test_values_like_transformers_defaults_or_invalid_are_left_out() -> None:
    """top_k 50 is transformers' default (vLLM's diff leaves it out); bad values are ignored."""
    assert sampling_defaults({"top_k": 50, "temperature": 1.0}) == SamplingDefaults(temperature=1.0)
    bad = {"temperature": "hot", "top_p": 0, "top_k": -5, "min_p": 2, "repetition_penalty": True}
    assert sampling_defaults(bad) == NO_DEFAULTS
    assert sampling_defaults({"min_p": 0.05, "max_new_tokens": 9}) == SamplingDefaults(min_p=0.05)


def test_a_model_without_the_file_has_none() -> None:
    """The stand-in's default tokenizer has no generation_config.json."""
    assert load_tokenizer_bundle(tokenizer_dir()).sampling_defaults == NO_DEFAULTS
