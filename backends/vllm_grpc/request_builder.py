"""Maps a validated OpenAI request onto vLLM's `GenerateRequest`, setting every field explicitly."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import orjson
from smg_grpc_proto.generated import vllm_engine_pb2

from backends.base import GenerationRequest
from backends.tool_calls.forced import forced_schema
from backends.vllm_grpc.chat_template import chat_request_inputs, render_inputs
from backends.vllm_grpc.sampling_defaults import SamplingDefaults
from backends.vllm_grpc.special_text import encode_prompt, mask_inputs
from backends.vllm_grpc.tokenizer_store import TokenizerBundle
from core.errors import ContextLengthExceeded, InvalidRequest, UnsupportedParameter
from core.protocol import ChatCompletionRequest, CompletionRequest

_TAIL_CHARS = 256


@dataclass(frozen=True, slots=True)
class ModelFacts:
    """What `GetModelInfo` told us about the served model."""

    served_name: str
    max_context_length: int
    vocab_size: int


@dataclass(frozen=True, slots=True)
class PreparedPrompt:
    """The request to send plus what decoding the answer needs."""

    message: Any  # vllm_engine_pb2.GenerateRequest
    prompt_ids: list[int]
    echo_text: str
    prompt_tail: str = ""  # the end of a rendered chat prompt: does it open a think block?


def prepare(
    request: GenerationRequest,
    bundle: TokenizerBundle,
    facts: ModelFacts,
    backend_request_id: str,
) -> PreparedPrompt:
    """Render, tokenize and validate; raises 400s that name the parameter."""
    body = request.body
    echo_text = ""
    limit = facts.max_context_length
    if isinstance(body, ChatCompletionRequest):
        text, ids = _chat_prompt(bundle, body, limit)
        param = "messages"
    else:
        prompt = body.single_prompt
        if isinstance(prompt, str):
            text = prompt
            _refuse_too_long(bundle, text, limit, "prompt")
            ids = bundle.encode(prompt, add_special_tokens=True)
        else:
            ids = prompt
            text = ""
            _check_token_ids(ids, facts)
        if body.echo:
            echo_text = text or bundle.tokenizer.decode(ids, skip_special_tokens=False)
        param = "prompt"
    if not ids:
        raise InvalidRequest("The prompt is empty after tokenization.", param=param)
    if len(ids) >= limit:
        raise ContextLengthExceeded(
            f"This model's maximum context length is {limit} tokens. However, your prompt "
            f"has {len(ids)} tokens. Please reduce the length of the {param}.",
            param=param,
        )
    max_tokens = body.max_output_tokens
    if max_tokens is None or (request.max_tokens_from_key and len(ids) + max_tokens > limit):
        max_tokens = limit - len(ids)
        if body.min_tokens and body.min_tokens > max_tokens:
            raise ContextLengthExceeded(
                f"This model's maximum context length is {limit} tokens. However, you asked "
                f"for at least {body.min_tokens} tokens after a prompt of {len(ids)}. Please "
                "reduce the prompt or min_tokens.",
                param="min_tokens",
            )
    elif len(ids) + max_tokens > limit:
        raise ContextLengthExceeded(
            f"This model's maximum context length is {limit} tokens. However, you requested "
            f"{len(ids) + max_tokens} tokens ({len(ids)} in the prompt, {max_tokens} for the "
            "completion). Please reduce the prompt or the completion length.",
            param=body.max_tokens_param,
        )
    if max_tokens == 0:
        # Echo alone (`echo_only`): the engine generates at least one token (vLLM's server
        # asks for 1 too), which the decoder drops; the prompt's logprobs come with it.
        max_tokens = 1
    message = vllm_engine_pb2.GenerateRequest(
        request_id=backend_request_id,
        tokenized=vllm_engine_pb2.TokenizedInput(original_text=text, input_ids=ids),
        sampling_params=_sampling(body, max_tokens, facts, bundle.sampling_defaults),
        stream=body.stream,
    )
    tail = text[-_TAIL_CHARS:] if isinstance(body, ChatCompletionRequest) else ""
    return PreparedPrompt(message, ids, echo_text, tail)


def _chat_prompt(
    bundle: TokenizerBundle, body: ChatCompletionRequest, limit: int
) -> tuple[str, list[int]]:
    """The rendered prompt and its ids, with special tokens' text from the messages, tools or
    chat_template_kwargs encoded as plain text (`special_text`) unless the bundle leaves that
    to the template."""
    inputs = chat_request_inputs(bundle, body)
    text = render_inputs(inputs)
    _refuse_too_long(bundle, text, limit, "messages")
    special = bundle.special_text
    if special is not None:
        masked = mask_inputs(
            special, inputs.messages, inputs.tools, inputs.variables, inputs.supplied, text
        )
        if masked is not None:
            masked_inputs = replace(
                inputs, messages=masked.messages, tools=masked.tools, variables=masked.variables
            )
            ids = encode_prompt(
                special, bundle.tokenizer, text, render_inputs(masked_inputs), masked
            )
            return text, ids
    return text, bundle.encode(text, add_special_tokens=False)


def _refuse_too_long(bundle: TokenizerBundle, text: str, limit: int, param: str) -> None:
    """Refuse a text too long to fit the context whatever its tokens, before tokenizing it."""
    fewest = bundle.cannot_fit(text, limit)
    if fewest:
        raise ContextLengthExceeded(
            f"This model's maximum context length is {limit} tokens. However, your prompt "
            f"has at least {fewest} tokens. Please reduce the length of the {param}.",
            param=param,
        )


def _check_token_ids(ids: list[int], facts: ModelFacts) -> None:
    for token_id in ids:
        if token_id >= facts.vocab_size:
            raise InvalidRequest(
                f"Token id {token_id} is outside the vocabulary of {facts.vocab_size}.",
                param="prompt",
            )


def fold_seed(seed: int) -> int:
    """A 64-bit seed as the proto's int32: its low 32 bits, two's complement (a C cast), so
    an int32 seed is itself and any other keeps the bits that vary most."""
    return (seed + 2**31) % 2**32 - 2**31


def _first(value: float | None, default: float | None, neutral: float) -> float:
    if value is not None:
        return value
    return neutral if default is None else default


def _sampling(
    body: ChatCompletionRequest | CompletionRequest,
    max_tokens: int,
    facts: ModelFacts,
    defaults: SamplingDefaults,
) -> Any:
    """The engine's sampling params: what the request sets, else the model's defaults
    (`sampling_defaults`), else the neutral values vLLM's server would use."""
    top_k = body.top_k if body.top_k is not None else defaults.top_k
    params = vllm_engine_pb2.SamplingParams(
        temperature=_first(body.temperature, defaults.temperature, 1.0),
        top_p=_first(body.top_p, defaults.top_p, 1.0),
        top_k=0 if top_k is None or top_k < 0 else top_k,
        min_p=_first(body.min_p, defaults.min_p, 0.0),
        frequency_penalty=body.frequency_penalty or 0.0,
        presence_penalty=body.presence_penalty or 0.0,
        repetition_penalty=_first(body.repetition_penalty, defaults.repetition_penalty, 1.0),
        max_tokens=max_tokens,
        min_tokens=body.min_tokens or 0,
        stop=body.stop_list,
        stop_token_ids=body.stop_token_ids or [],
        skip_special_tokens=body.skip_special_tokens,
        spaces_between_special_tokens=body.spaces_between_special_tokens,
        ignore_eos=bool(body.ignore_eos),
        n=body.n,
        include_stop_str_in_output=body.include_stop_str_in_output,
    )
    if body.seed is not None:
        params.seed = fold_seed(body.seed)
    if body.logit_bias:
        for key, bias in body.logit_bias.items():
            token_id = int(key)
            if token_id >= facts.vocab_size:
                raise InvalidRequest(
                    f"logit_bias names token {token_id}, outside the vocabulary of "
                    f"{facts.vocab_size}.",
                    param="logit_bias",
                )
            params.logit_bias[token_id] = bias
    if isinstance(body, ChatCompletionRequest):
        if body.logprobs:
            params.logprobs = body.top_logprobs or 0
        fmt = body.response_format
        forced = forced_schema(body) if body.tools else None
        if forced is not None:
            if fmt is not None and fmt.type != "text":
                raise UnsupportedParameter(
                    "response_format cannot be combined with a forced tool_choice.",
                    param="response_format",
                )
            params.json_schema = orjson.dumps(forced).decode()
        elif fmt is not None and fmt.type == "json_object":
            params.json_object = True
        elif fmt is not None and fmt.type == "json_schema" and fmt.json_schema is not None:
            schema = fmt.json_schema.schema_ or {}
            params.json_schema = orjson.dumps(schema).decode()
    elif body.logprobs is not None:
        params.logprobs = body.logprobs
        if body.echo:  # the echoed prompt comes with its tokens' logprobs, as at OpenAI
            params.prompt_logprobs = body.logprobs
    return params
