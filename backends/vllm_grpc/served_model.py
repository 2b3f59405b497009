"""What one vLLM replica serves, learned from its server in one piece (`learn`): the model's
facts (`GetModelInfo`) and its tokenizer and chat templates (`GetTokenizer`, or a configured
directory). A replica replaces the whole when its server restarts; a request keeps the one it
was prepared with."""

from __future__ import annotations

import asyncio
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from smg_grpc_proto.generated import vllm_engine_pb2

from backends.served import Served
from backends.vllm_grpc.logprobs import TokenTexts
from backends.vllm_grpc.request_builder import ModelFacts
from backends.vllm_grpc.tokenizer_fetch import fetch_tokenizer_dir
from backends.vllm_grpc.tokenizer_store import TokenizerBundle, load_tokenizer_bundle

DEFAULT_CONTEXT = 4096  # a server that reports no context length


@dataclass(frozen=True, slots=True)
class ServedModel:
    """A replica's model, tokenizer and what it reported of them (`described`)."""

    bundle: TokenizerBundle
    facts: ModelFacts
    token_texts: TokenTexts
    described: Served

    def prepares_as(self, other: ServedModel) -> bool:
        """Whether a prompt prepared for `other` is the one this would prepare: the same
        tokenizer, chat templates, EOS ids and sampling defaults (`tokenizer_digest`), and the
        same facts (context, vocabulary)."""
        return self.facts == other.facts and self.described.tokenizer == other.described.tokenizer


async def learn(
    stub: Any,
    *,
    tokenizer_dir: Path | None,
    cache_dir: Path,
    timeout: float,
    known: ServedModel | None = None,
    split_special_tokens: bool = True,
    generation_config: bool = True,
) -> ServedModel:
    """Ask the server what it serves. The tokenizer is fetched again (the cache keeps it by
    content), but loaded again only when it differs from the `known` one's; the options are
    `load_tokenizer_bundle`'s."""
    info = await stub.GetModelInfo(vllm_engine_pb2.GetModelInfoRequest(), timeout=timeout)
    directory = tokenizer_dir
    if directory is None:
        directory = await fetch_tokenizer_dir(stub, cache_dir, timeout)
    if known is not None and known.bundle.directory == directory:
        bundle, digest, texts = known.bundle, known.described.tokenizer, known.token_texts
    else:
        bundle, digest = await asyncio.to_thread(
            _load, directory, split_special_tokens, generation_config
        )
        texts = TokenTexts(bundle.tokenizer)
    facts = ModelFacts(
        served_name=info.served_model_name,
        max_context_length=info.max_context_length or DEFAULT_CONTEXT,
        vocab_size=info.vocab_size or bundle.tokenizer.get_vocab_size(),
    )
    described = Served(info.served_model_name, digest, facts.max_context_length)
    return ServedModel(bundle, facts, texts, described)


def _load(
    directory: Path, split_special_tokens: bool, generation_config: bool
) -> tuple[TokenizerBundle, str]:
    bundle = load_tokenizer_bundle(
        directory, split_special_tokens=split_special_tokens, generation_config=generation_config
    )
    return bundle, tokenizer_digest(bundle)


def tokenizer_digest(bundle: TokenizerBundle) -> str:
    """A digest of what shapes prompts and answers: the vocabulary and its rules, the chat
    templates and the special tokens they use, BOS/EOS handling and the sampling defaults
    (`generation_config.json`) a prepared request carries (not the archive's bytes, whose
    timestamps differ between servers holding the same files)."""
    digest = hashlib.sha256((bundle.directory / "tokenizer.json").read_bytes())
    for name, template in sorted(bundle.chat_templates.items()):
        digest.update(f"\0template {name}\0{template.source}".encode())
    for key, token in sorted(bundle.special_tokens.items()):
        digest.update(f"\0{key}={token}".encode())
    digest.update(
        f"\0bos={bundle.add_bos_token} eos={bundle.add_eos_token} {bundle.eos_token_ids}"
        f" special_as_text={bundle.special_text is not None}"
        f"\0{bundle.sampling_defaults!r}".encode()
    )
    return digest.hexdigest()[:16]
