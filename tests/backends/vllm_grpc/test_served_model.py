"""What a replica serves, and when a prompt prepared for one is the one another would prepare."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from backends.served import Served
from backends.vllm_grpc.logprobs import TokenTexts
from backends.vllm_grpc.request_builder import ModelFacts
from backends.vllm_grpc.served_model import ServedModel, _load
from standin.vllm.tokenizer_files import write_tokenizer_dir


def _served(directory: Path) -> ServedModel:
    bundle, digest = _load(directory, True, True)
    facts = ModelFacts(served_name="sim", max_context_length=4096, vocab_size=0)
    return ServedModel(bundle, facts, TokenTexts(bundle.tokenizer), Served("sim", digest, 4096))


def test_the_same_files_prepare_alike(tmp_path: Path) -> None:
    """Two copies of one tokenizer directory prepare prompts alike, with one digest."""
    a = _served(write_tokenizer_dir(tmp_path / "a"))
    b = _served(write_tokenizer_dir(tmp_path / "b"))
    assert b.prepares_as(a) and a.described.tokenizer == b.described.tokenizer


@pytest.mark.parametrize(
    "config",
    [{"temperature": 0.6, "top_p": 0.9}, {"eos_token_id": [3, 7]}],
    ids=["sampling defaults", "eos ids"],
)
def test_another_generation_config_prepares_otherwise(
    tmp_path: Path, config: dict[str, object]
) -> None:
    """Replicas whose generation_config.json differs (sampling defaults, EOS ids, which a
    prepared request carries) do not share prepared prompts, and their digests differ."""
    a = write_tokenizer_dir(tmp_path / "a")
    b = write_tokenizer_dir(tmp_path / "b")
    (b / "generation_config.json").write_text(json.dumps(config))
    served_a, served_b = _served(a), _served(b)
    assert not served_b.prepares_as(served_a)
    assert served_a.described.tokenizer != served_b.described.tokenizer
