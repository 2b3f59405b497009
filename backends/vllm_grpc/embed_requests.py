"""The `Embed` requests of an embeddings request: each input tokenized (texts in one batch)
and checked against the model before any is sent, a 400 naming the input that cannot be."""

from __future__ import annotations

import asyncio
from typing import Any

from smg_grpc_proto.generated import vllm_engine_pb2

from backends.vllm_grpc.request_builder import ModelFacts
from backends.vllm_grpc.tokenizer_store import TokenizerBundle
from core.errors import InvalidRequest, UnsupportedParameter
from core.protocol import EmbeddingRequest

_LARGE_INPUT_CHARS = 32_000  # tokenize inputs this large off the event loop


async def embed_requests(
    body: EmbeddingRequest, request_id: str, bundle: TokenizerBundle, facts: ModelFacts
) -> list[Any]:
    """One `EmbedRequest` per input, in order, each with its own engine request id."""
    if body.dimensions is not None:
        raise UnsupportedParameter(
            "dimensions is not supported by this model's gRPC backend: vLLM's gRPC Embed"
            " request has no field for it (it is served over vLLM's OpenAI-compatible HTTP"
            " server).",
            param="dimensions",
        )
    inputs = body.inputs
    limit = facts.max_context_length
    for position, item in enumerate(inputs):
        if isinstance(item, str) and bundle.cannot_fit(item, limit + 1):
            param = input_param(body, position)  # refused before any input is tokenized
            raise InvalidRequest(f"{param} must have 1 to {limit} tokens.", param=param)
    texts = [item for item in inputs if isinstance(item, str)]
    if sum(map(len, texts)) > _LARGE_INPUT_CHARS:
        encoded = await asyncio.to_thread(bundle.encode_many, texts, True)
    else:
        encoded = bundle.encode_many(texts, True)
    tokenized = iter(encoded)
    messages = []
    for position, item in enumerate(inputs):
        ids = next(tokenized) if isinstance(item, str) else item
        if not ids or len(ids) > facts.max_context_length:
            param = input_param(body, position)
            raise InvalidRequest(
                f"{param} must have 1 to {facts.max_context_length} tokens.", param=param
            )
        if not isinstance(item, str) and max(ids) >= facts.vocab_size:
            param = input_param(body, position)
            raise InvalidRequest(
                f"{param} holds token id {max(ids)}, outside the vocabulary of {facts.vocab_size}.",
                param=param,
            )
        messages.append(
            vllm_engine_pb2.EmbedRequest(
                request_id=f"{request_id}-{position}",
                tokenized=vllm_engine_pb2.TokenizedInput(
                    original_text=item if isinstance(item, str) else "", input_ids=ids
                ),
            )
        )
    return messages


def input_param(body: EmbeddingRequest, position: int) -> str:
    """The parameter that names one input: `input` itself when it is a single text or token
    list, else `input[i]`."""
    single = isinstance(body.input, str) or isinstance(body.input[0], int)
    return "input" if single else f"input[{position}]"
