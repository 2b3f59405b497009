"""The decoder a request gets: which stop tokens it hides, and from which token on a stop
string may end its answer, as vLLM decides them from the request."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from backends.base import GenerationRequest
from backends.vllm_grpc.decoding import ChoiceDecoder
from backends.vllm_grpc.logprobs import TokenTexts
from backends.vllm_grpc.output_formats import OutputFormats
from backends.vllm_grpc.request_builder import PreparedPrompt
from backends.vllm_grpc.tokenizer_store import TokenizerBundle, load_tokenizer_bundle
from core.protocol import CompletionRequest
from core.request_parsing import parse_request
from standin.vllm.tokenizer_files import tokenizer_dir


@pytest.fixture(scope="module")
def bundle() -> TokenizerBundle:
    return load_tokenizer_bundle(tokenizer_dir())


def _choice(bundle: TokenizerBundle, **fields: Any) -> ChoiceDecoder:
    raw = orjson.dumps({"model": "sim", "prompt": "Say it:", **fields})
    request = GenerationRequest("completion", parse_request(raw, CompletionRequest), raw, "r-1")
    prompt_ids = bundle.tokenizer.encode("Say it:", add_special_tokens=False).ids
    prepared = PreparedPrompt(None, prompt_ids, "")
    formats = OutputFormats(None, None)
    return formats.decoder(request, prepared, bundle, TokenTexts(bundle.tokenizer)).choices[0]


def _text(choice: ChoiceDecoder, ids: list[int]) -> str:
    """The choice's text, fed its ids one at a time and finished as the engine stops."""
    deltas = [choice.feed([token_id], None) for token_id in ids]
    return "".join(delta.text for delta in [*deltas, choice.finish("stop")])


def _ids(bundle: TokenizerBundle, text: str) -> list[int]:
    return list(bundle.tokenizer.encode(text, add_special_tokens=False).ids)


@pytest.mark.parametrize(("include", "text"), [(False, "The quick"), (True, "The quick brown")])
def test_a_stop_token_ids_entry_shows_only_when_asked(
    bundle: TokenizerBundle, include: bool, text: str
) -> None:
    """The `stop_token_ids` entry the engine stopped on is text only with
    `include_stop_str_in_output` (vLLM's rule)."""
    ids = _ids(bundle, "The quick brown")
    choice = _choice(bundle, stop_token_ids=[ids[-1]], include_stop_str_in_output=include)
    assert _text(choice, ids) == text


@pytest.mark.parametrize(
    ("fields", "text"),
    [
        ({}, "The quick"),
        ({"include_stop_str_in_output": True}, "The quick"),  # its text is empty
        ({"include_stop_str_in_output": True, "skip_special_tokens": False}, "The quick<|im_end|>"),
        ({"ignore_eos": True, "skip_special_tokens": False}, "The quick<|im_end|>"),
    ],
)
def test_the_end_of_sequence_token_shows_as_vllm_shows_it(
    bundle: TokenizerBundle, fields: dict[str, Any], text: str
) -> None:
    """The EOS is hidden like any stop token, unless `include_stop_str_in_output` or
    `ignore_eos` (then it stopped nothing) makes it text: with special tokens kept, its own."""
    ids = [*_ids(bundle, "The quick"), bundle.eos_token_ids[0]]
    assert _text(_choice(bundle, **fields), ids) == text


def test_min_tokens_reaches_the_stop_checker(bundle: TokenizerBundle) -> None:
    """A stop string ending within the first `min_tokens` tokens does not end the answer."""
    ids = _ids(bundle, "The quick brown fox")
    assert _text(_choice(bundle, stop=["quick"], min_tokens=3), ids) == "The quick brown fox"
    assert _text(_choice(bundle, stop=["quick"]), ids) == "The "
