"""A GenerateRequest read and validated the way vLLM does, with the real server's defaults."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from standin.vllm.sampling import SamplingSpec
from standin.vllm.structured import Choice, Constraint, JsonObject, JsonSchema
from standin.vllm.vocab import Vocabulary

# vLLM's default --max-logprobs.
MAX_LOGPROBS = 20


class InvalidRequest(ValueError):
    """The request is malformed or out of range: INVALID_ARGUMENT."""


class UnsupportedRequest(Exception):
    """Valid for vLLM but beyond what the stand-in can imitate: UNIMPLEMENTED."""


@dataclass(frozen=True, slots=True)
class ParsedGenerate:
    request_id: str
    prompt_ids: list[int]
    spec: SamplingSpec
    stream: bool


def parse_generate(request: Any, vocab: Vocabulary, max_context_length: int) -> ParsedGenerate:
    """Read `request` (a GenerateRequest); raises InvalidRequest / UnsupportedRequest."""
    prompt_ids = _prompt_ids(request, vocab)
    params = request.sampling_params
    if params.HasField("truncate_prompt_tokens"):
        prompt_ids = _truncate(prompt_ids, params.truncate_prompt_tokens, max_context_length)
    if len(prompt_ids) > max_context_length:
        raise InvalidRequest(
            f"The decoder prompt (length {len(prompt_ids)}) is longer than the maximum model "
            f"length of {max_context_length}. Make sure that `max_model_len` is no smaller "
            "than the number of text tokens."
        )
    if len(prompt_ids) == max_context_length:
        raise InvalidRequest(
            f"The decoder prompt (length {len(prompt_ids)}) leaves no room for output within "
            f"the maximum model length of {max_context_length}."
        )
    if request.HasField("data_parallel_rank") and request.data_parallel_rank != 0:
        raise InvalidRequest(
            f"data_parallel_rank {request.data_parallel_rank} is out of range [0, 1)."
        )
    spec = _spec(params, vocab)
    return ParsedGenerate(request.request_id, prompt_ids, spec, bool(request.stream))


def _prompt_ids(request: Any, vocab: Vocabulary) -> list[int]:
    kind = request.WhichOneof("input")
    if kind == "tokenized":
        prompt_ids = list(request.tokenized.input_ids)
    elif kind == "text":
        prompt_ids = vocab.encode(request.text)
    else:
        raise InvalidRequest("GenerateRequest needs an input: tokenized or text.")
    if not prompt_ids:
        raise InvalidRequest("The decoder prompt cannot be empty.")
    if request.HasField("mm_inputs") or request.HasField("media_refs"):
        raise InvalidRequest("This model does not support multimodal inputs.")
    largest = max(prompt_ids)
    if largest >= vocab.vocab_size:
        raise InvalidRequest(f"Token id {largest} is out of vocabulary.")
    return prompt_ids


def _truncate(prompt_ids: list[int], keep: int, max_context_length: int) -> list[int]:
    if keep == -1:
        keep = max_context_length
    if keep < 1:
        raise InvalidRequest(f"truncate_prompt_tokens must be >= 1 or -1, got {keep}.")
    if keep > max_context_length:
        raise InvalidRequest(
            f"truncate_prompt_tokens value ({keep}) is greater than "
            f"max_model_len ({max_context_length})."
        )
    return prompt_ids[-keep:]


def _check(condition: bool, message: str) -> None:
    if not condition:
        raise InvalidRequest(message)


def _spec(params: Any, vocab: Vocabulary) -> SamplingSpec:
    temperature = params.temperature if params.HasField("temperature") else 1.0
    _check(temperature >= 0.0, f"temperature must be non-negative, got {temperature}.")
    top_p = params.top_p if params.top_p != 0.0 else 1.0
    _check(0.0 < top_p <= 1.0, f"top_p must be in (0, 1], got {top_p}.")
    _check(0.0 <= params.min_p <= 1.0, f"min_p must be in [0, 1], got {params.min_p}.")
    for name in ("presence_penalty", "frequency_penalty"):
        value = getattr(params, name)
        _check(-2.0 <= value <= 2.0, f"{name} must be in [-2, 2], got {value}.")
    _check(
        params.repetition_penalty >= 0.0,
        f"repetition_penalty must be greater than zero, got {params.repetition_penalty}.",
    )
    max_tokens = params.max_tokens if params.HasField("max_tokens") else None
    if max_tokens is not None:
        _check(max_tokens >= 1, f"max_tokens must be at least 1, got {max_tokens}.")
        _check(
            params.min_tokens <= max_tokens,
            f"min_tokens must be less than or equal to max_tokens={max_tokens}, "
            f"got {params.min_tokens}.",
        )
    stop = tuple(params.stop)
    _check(all(stop), "stop cannot contain an empty string.")
    invalid_bias = sorted(key for key in params.logit_bias if not 0 <= key < vocab.vocab_size)
    _check(
        not invalid_bias,
        f"token_id(s) {invalid_bias} in logit_bias contain out-of-vocab token ids. "
        f"Vocabulary size: {vocab.vocab_size}",
    )
    return SamplingSpec(
        max_tokens=max_tokens,
        min_tokens=params.min_tokens,
        stop=stop,
        stop_token_ids=tuple(params.stop_token_ids),
        ignore_eos=params.ignore_eos,
        seed=params.seed if params.HasField("seed") else None,
        n=params.n if params.n > 0 else 1,
        logprobs=_logprobs(params, "logprobs", "sample", vocab),
        prompt_logprobs=_logprobs(params, "prompt_logprobs", "prompt", vocab),
        include_stop_str_in_output=params.include_stop_str_in_output,
        constraint=_constraint(params),
    )


def _logprobs(params: Any, name: str, label: str, vocab: Vocabulary) -> int | None:
    if not params.HasField(name):
        return None
    value: int = getattr(params, name)
    _check(value >= -1, f"{name} must be non-negative or -1, got {value}.")
    requested = vocab.vocab_size if value == -1 else value
    _check(
        requested <= MAX_LOGPROBS,
        f"Requested {label} logprobs of {requested}, which is greater than max allowed: "
        f"{MAX_LOGPROBS}",
    )
    return requested


def _constraint(params: Any) -> Constraint | None:
    kind = params.WhichOneof("constraint")
    if kind is None:
        return None
    if kind == "json_object":
        return JsonObject() if params.json_object else None
    if kind == "json_schema":
        try:
            schema = json.loads(params.json_schema)
        except ValueError as exc:
            raise InvalidRequest(f"Invalid JSON schema: {exc}") from exc
        _check(isinstance(schema, dict), "Invalid JSON schema: expected a JSON object.")
        return JsonSchema(schema)
    if kind == "choice":
        choices = tuple(params.choice.choices)
        _check(bool(choices), "choice must list at least one option.")
        return Choice(choices)
    raise UnsupportedRequest(f"the vLLM stand-in cannot honour {kind} constraints")
