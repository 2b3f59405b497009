"""Requests that cannot fit the model's context are refused before any RPC, in OpenAI's
shape (`context_length_exceeded`, naming the parameter)."""

from __future__ import annotations

import dataclasses
from typing import Any, cast

import orjson
import pytest
from tokenizers import Tokenizer

from backends.base import GenerationRequest
from backends.vllm_grpc.request_builder import ModelFacts, prepare
from backends.vllm_grpc.tokenizer_store import TokenizerBundle, load_tokenizer_bundle
from core.errors import ContextLengthExceeded
from core.protocol import ChatCompletionRequest, CompletionRequest
from core.request_parsing import parse_request
from standin.vllm.tokenizer_files import tokenizer_dir

FACTS = ModelFacts("sim", max_context_length=64, vocab_size=1000)


@pytest.fixture(scope="module")
def bundle() -> TokenizerBundle:
    return load_tokenizer_bundle(tokenizer_dir())


def _completion(**fields: Any) -> GenerationRequest:
    body = parse_request(orjson.dumps({"model": "sim", **fields}), CompletionRequest)
    return GenerationRequest("completion", body, b"", "r1")


def _chat(text: str, **fields: Any) -> GenerationRequest:
    payload = {"model": "sim", "messages": [{"role": "user", "content": text}], **fields}
    body = parse_request(orjson.dumps(payload), ChatCompletionRequest)
    return GenerationRequest("chat", body, b"", "r1")


def test_prompt_longer_than_the_context(bundle: TokenizerBundle) -> None:
    """A prompt of the whole context or more names the prompt or the messages."""
    with pytest.raises(ContextLengthExceeded) as info:
        prepare(_completion(prompt=list(range(1, 65))), bundle, FACTS, "r1")
    assert info.value.code == "context_length_exceeded" and info.value.param == "prompt"
    assert info.value.status == 400 and "64 tokens" in info.value.message
    with pytest.raises(ContextLengthExceeded) as chat:
        prepare(_chat("word " * 200), bundle, FACTS, "r1")
    assert chat.value.param == "messages"


def test_prompt_plus_max_tokens_over_the_context(bundle: TokenizerBundle) -> None:
    """A prompt that fits, with a max_tokens that does not, names max_tokens."""
    with pytest.raises(ContextLengthExceeded) as info:
        prepare(_completion(prompt=[1, 2, 3], max_tokens=62), bundle, FACTS, "r1")
    assert info.value.param == "max_tokens"
    assert prepare(_completion(prompt=[1, 2, 3], max_tokens=61), bundle, FACTS, "r1")


def test_min_tokens_beyond_what_the_context_leaves(bundle: TokenizerBundle) -> None:
    """Without max_tokens, a min_tokens the context cannot hold after the prompt names
    min_tokens here, before the engine (which would say max_tokens, with no param)."""
    room = FACTS.max_context_length - len(prepare(_chat("hi"), bundle, FACTS, "r1").prompt_ids)
    with pytest.raises(ContextLengthExceeded) as info:
        prepare(_chat("hi", min_tokens=room + 1), bundle, FACTS, "r1")
    assert info.value.param == "min_tokens"
    assert prepare(_chat("hi", min_tokens=room), bundle, FACTS, "r1")


def test_a_completion_without_max_tokens_gets_16(bundle: TokenizerBundle) -> None:
    """OpenAI's and vLLM's default for a text completion; a chat completion without one
    gets the room left in the context."""
    completion = prepare(_completion(prompt=[1, 2, 3]), bundle, FACTS, "r1")
    assert completion.message.sampling_params.max_tokens == 16
    chat = prepare(_chat("hi"), bundle, FACTS, "r1")
    room = FACTS.max_context_length - len(chat.prompt_ids)
    assert chat.message.sampling_params.max_tokens == room


def test_an_echo_alone_asks_the_engine_for_one_token(bundle: TokenizerBundle) -> None:
    """`echo` with `max_tokens: 0` sends `max_tokens: 1` (the engine cannot generate none;
    vLLM's server asks for 1 too), with the prompt's logprobs when they are asked for."""
    echo = prepare(
        _completion(prompt="hi", echo=True, max_tokens=0, logprobs=2), bundle, FACTS, "r1"
    )
    params = echo.message.sampling_params
    assert params.max_tokens == 1 and params.prompt_logprobs == 2 and echo.echo_text == "hi"


class _CountingTokenizer:
    """Delegates to a tokenizer and counts the texts it was asked to encode."""

    def __init__(self, tokenizer: Tokenizer) -> None:
        self._tokenizer = tokenizer
        self.encoded = 0

    def encode_batch_fast(self, texts: list[str], add_special_tokens: bool) -> Any:
        self.encoded += len(texts)
        return self._tokenizer.encode_batch_fast(texts, add_special_tokens=add_special_tokens)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tokenizer, name)


def _counting(bundle: TokenizerBundle) -> tuple[TokenizerBundle, _CountingTokenizer]:
    counting = _CountingTokenizer(bundle.tokenizer)
    return dataclasses.replace(bundle, tokenizer=cast(Tokenizer, counting)), counting


def test_a_prompt_too_long_for_any_tokens_is_refused_untokenized(bundle: TokenizerBundle) -> None:
    """A text longer than the context at the tokenizer's most characters per token is
    refused naming the same parameter, without tokenizing it (memory grows with the text)."""
    counting_bundle, counting = _counting(bundle)
    huge = "a" * 200_000
    with pytest.raises(ContextLengthExceeded) as chat:
        prepare(_chat(huge), counting_bundle, FACTS, "r1")
    assert chat.value.param == "messages" and "64 tokens" in chat.value.message
    with pytest.raises(ContextLengthExceeded) as completion:
        prepare(_completion(prompt=huge), counting_bundle, FACTS, "r1")
    assert completion.value.param == "prompt"
    assert counting.encoded == 0


def test_a_prompt_that_could_fit_is_still_tokenized(bundle: TokenizerBundle) -> None:
    """A text short enough to fit at the most characters per token is tokenized and judged
    by its real token count, as before."""
    counting_bundle, counting = _counting(bundle)
    per_token = bundle.max_chars_per_token
    assert per_token is not None
    prepare(_completion(prompt="a" * 10, max_tokens=1), counting_bundle, FACTS, "r1")
    with pytest.raises(ContextLengthExceeded):
        prepare(_completion(prompt="a b " * 200), counting_bundle, FACTS, "r1")
    assert counting.encoded == 2


@pytest.mark.parametrize(
    ("seed", "sent"),
    [(7, 7), (-1, -1), (2**31 - 1, 2**31 - 1), (2**31, -(2**31)), (2**40 + 7, 7), (-(2**63), 0)],
)
def test_a_64_bit_seed_is_folded_into_the_protos_int32(
    bundle: TokenizerBundle, seed: int, sent: int
) -> None:
    """vLLM's HTTP server takes 64-bit seeds; the proto's field is int32: the low 32 bits go,
    two's complement, so an int32 seed is sent as it is."""
    prepared = prepare(_chat("hi", seed=seed), bundle, FACTS, "r1")
    assert prepared.message.sampling_params.seed == sent


def test_the_keys_cap_gives_way_to_the_room_the_context_leaves(bundle: TokenizerBundle) -> None:
    """A max_tokens set by the key's cap (the client sent none) runs to the room the context
    leaves where that is less; the client's own max_tokens there is still a 400."""
    keyed = dataclasses.replace(
        _completion(prompt=[1] * 60, max_tokens=8), max_tokens_from_key=True
    )
    assert prepare(keyed, bundle, FACTS, "r1").message.sampling_params.max_tokens == 4
    roomy = dataclasses.replace(
        _completion(prompt=[1] * 50, max_tokens=8), max_tokens_from_key=True
    )
    assert prepare(roomy, bundle, FACTS, "r1").message.sampling_params.max_tokens == 8
    with pytest.raises(ContextLengthExceeded) as asked:
        prepare(_completion(prompt=[1] * 60, max_tokens=8), bundle, FACTS, "r1")
    assert asked.value.param == "max_tokens"
    with pytest.raises(ContextLengthExceeded) as full:
        prepare(
            dataclasses.replace(keyed, body=_completion(prompt=[1] * 64).body), bundle, FACTS, "r1"
        )
    assert full.value.param == "prompt"
