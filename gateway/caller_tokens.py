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


def runs_at_key_cap(body: Body, caller: Caller) -> bool:
    """Whether the key's cap is the request's output cap: it names no `max_tokens`, and has
    no default within the cap (a completion's 16)."""
    cap = caller.limits.max_tokens
    if cap is None or body.requested_max_tokens is not None:
        return False
    default = body.max_output_tokens
    return default is None or default > cap


def within_key_cap(body: Body, raw: bytes, caller: Caller) -> tuple[Body, bytes]:
    """The request as it may run: one that names no `max_tokens` gets its key's cap as
    `max_tokens` (in the raw body too, which an HTTP backend is sent), so leaving the field
    out never lifts the cap; a completion's default (16) is kept where it is within the cap.
    The cap is a ceiling, not the client's ask (`GenerationRequest.max_tokens_from_key`)."""
    cap = caller.limits.max_tokens
    if cap is None or not runs_at_key_cap(body, caller):
        return body, raw
    data = orjson.loads(raw)
    data["max_tokens"] = cap
    return body.model_copy(update={"max_tokens": cap}), orjson.dumps(data)


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
