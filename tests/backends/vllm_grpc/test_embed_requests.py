"""Embedding inputs are tokenized and checked against the model before any is sent."""

from __future__ import annotations

import dataclasses
from typing import Any, cast

import orjson
import pytest
from tokenizers import Tokenizer

from backends.vllm_grpc.embed_requests import embed_requests
from backends.vllm_grpc.request_builder import ModelFacts
from backends.vllm_grpc.tokenizer_store import TokenizerBundle, load_tokenizer_bundle
from core.errors import InvalidRequest
from core.protocol import EmbeddingRequest
from core.request_parsing import parse_request
from standin.vllm.tokenizer_files import tokenizer_dir

FACTS = ModelFacts("sim", max_context_length=64, vocab_size=1000)


class _RefusingTokenizer:
    """A tokenizer that fails the test if asked to encode anything."""

    def encode_batch_fast(self, texts: list[str], add_special_tokens: bool) -> Any:
        raise AssertionError(f"tokenized {len(texts)} texts")


def _body(inputs: Any) -> EmbeddingRequest:
    return parse_request(orjson.dumps({"model": "sim", "input": inputs}), EmbeddingRequest)


@pytest.fixture(scope="module")
def bundle() -> TokenizerBundle:
    return load_tokenizer_bundle(tokenizer_dir())


async def test_an_input_too_long_for_any_tokens_is_refused_untokenized(
    bundle: TokenizerBundle,
) -> None:
    """An input longer than the context at the most characters per token is a 400 naming
    it, before any input is tokenized."""
    refusing = dataclasses.replace(bundle, tokenizer=cast(Tokenizer, _RefusingTokenizer()))
    with pytest.raises(InvalidRequest) as info:
        await embed_requests(_body(["hi", "a" * 200_000]), "r1", refusing, FACTS)
    assert info.value.param == "input[1]" and "1 to 64 tokens" in info.value.message


async def test_inputs_that_could_fit_are_tokenized_and_judged(bundle: TokenizerBundle) -> None:
    """Inputs short enough to fit are tokenized; one with too many tokens is still named."""
    assert len(await embed_requests(_body(["hi", "there"]), "r1", bundle, FACTS)) == 2
    with pytest.raises(InvalidRequest) as info:
        await embed_requests(_body("a b " * 100), "r1", bundle, FACTS)
    assert info.value.param == "input"
