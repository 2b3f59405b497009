"""What a request may cost against its caller's limits: the cap on `max_tokens`, the tokens
reserved before it runs, the tokens charged once it has run."""

from __future__ import annotations

import orjson

from access.caller import Caller
from access.limiter import Admission
from access.reservation import Reservation
from core.errors import InvalidRequest
from core.protocol import ChatCompletionRequest, CompletionRequest, EmbeddingRequest
from core.token_estimate import prompt_tokens
from obs.request_record import RequestRecord

Body = ChatCompletionRequest | CompletionRequest


def check_max_tokens(body: Body, caller: Caller) -> None:
    """400, naming the field the client sent, when the request asks for more output than the
    caller's key allows."""
    cap = caller.limits.max_tokens
    asked = body.requested_max_tokens
    if cap is not None and asked is not None and asked > cap:
        param = body.max_tokens_param
        raise InvalidRequest(
            f"{param} is {asked}, above this API key's limit of {cap}.", param=param
        )


def output_ceiling(body: Body, caller: Caller) -> int | None:
    """The most output tokens for each choice a request that names no maximum may run to: its
    key's cap, and what its caller's smallest token limit leaves beside its (estimated)
    prompt; None when it names its own maximum, has no such bound, or its default (a
    completion's 16) is within it. Without the second, one request with no maximum could
    spend a 300-token-a-minute key's budget a hundred times over before its usage was
    charged. A `min_tokens` above the ceiling is a 400 naming it, before any backend work."""
    if body.requested_max_tokens is not None:
        return None
    bounds = [] if caller.limits.max_tokens is None else [caller.limits.max_tokens]
    token_limits = [
        amount
        for limits in (caller.limits, caller.tenant_limits)
        for amount in (limits.tokens_per_minute, limits.tokens_per_day)
        if amount
    ]
    if token_limits:
        prompt, choices = prompt_tokens(body), body.choice_count
        bounds += [(amount - prompt) // choices for amount in token_limits]
    if not bounds:
        return None
    ceiling = max(1, min(bounds))
    default = body.max_output_tokens
    if default is not None and default <= ceiling:
        return None
    if body.min_tokens and body.min_tokens > ceiling:
        raise InvalidRequest(
            f"min_tokens is {body.min_tokens}, above the {ceiling} output tokens this API "
            "key's limits allow a request.",
            param="min_tokens",
        )
    return ceiling


def within_ceiling(body: Body, raw: bytes, ceiling: int | None) -> tuple[Body, bytes]:
    """The request as it may run: one that names no maximum gets its `output_ceiling` as
    `max_tokens` (in the raw body too, which an HTTP backend is sent), so leaving the field
    out never lifts the key's cap or its token limits. The ceiling is not the client's ask
    (`GenerationRequest.max_tokens_from_key`)."""
    if ceiling is None:
        return body, raw
    data = orjson.loads(raw)
    data["max_tokens"] = ceiling
    return body.model_copy(update={"max_tokens": ceiling}), orjson.dumps(data)


def reservation(body: Body, caller: Caller, default_output: int) -> Reservation:
    """The tokens a request may cost: its prompt (every prompt of a batch), estimated, and the
    most each of its choices (n for each prompt) may generate. A request that names no maximum
    reserves the default for each, but never more in all than its smallest token limit leaves
    beside the prompt (a 300-token-a-minute key could otherwise never send one). It names the
    fields the client sent, for a 400 when no whole limit could hold it."""
    prompt = prompt_tokens(body)
    choices = body.choice_count
    output = body.max_output_tokens or caller.limits.max_tokens
    if output is None:
        room = [
            (amount - prompt) // choices
            for limits in (caller.limits, caller.tenant_limits)
            for amount in (limits.tokens_per_minute, limits.tokens_per_day)
            if amount
        ]
        output = max(1, min([default_output, *room]))
    prompt_param = "messages" if isinstance(body, ChatCompletionRequest) else "prompt"
    return Reservation(prompt, output, choices, body.n, prompt_param, body.max_tokens_param)


def input_reservation(body: EmbeddingRequest) -> Reservation:
    """What an embedding request reserves: its inputs, estimated (it generates nothing)."""
    return Reservation(prompt_tokens(body), prompt_param="input")


def used_tokens(record: RequestRecord, admission: Admission) -> int:
    """What a finished stream used; a stream that ended without its usage (the client left,
    the backend failed) is charged its whole reservation."""
    if record.input_tokens is None or record.output_tokens is None:
        return admission.reserved_tokens
    return record.input_tokens + record.output_tokens
