"""What a request may cost against its caller's limits: the cap on `max_tokens`, the tokens
reserved before it runs, the tokens charged once it has run."""

from __future__ import annotations

from access.caller import Caller
from access.limiter import Admission
from core.errors import InvalidRequest
from core.protocol import ChatCompletionRequest, CompletionRequest
from core.token_estimate import prompt_tokens
from obs.request_record import RequestRecord


def check_max_tokens(asked: int | None, caller: Caller) -> None:
    """400 when the request asks for more output than the caller's key allows."""
    cap = caller.limits.max_tokens
    if cap is not None and asked is not None and asked > cap:
        raise InvalidRequest(
            f"max_tokens is {asked}, above this API key's limit of {cap}.", param="max_tokens"
        )


def reserved_tokens(
    body: ChatCompletionRequest | CompletionRequest, caller: Caller, default_output: int
) -> int:
    """The tokens a request may cost: its prompt, estimated, and the most it may generate."""
    output = body.max_output_tokens or caller.limits.max_tokens or default_output
    return prompt_tokens(body) + output


def used_tokens(record: RequestRecord, admission: Admission) -> int:
    """What a finished stream used; a stream that ended without its usage (the client left,
    the backend failed) is charged its whole reservation."""
    if record.input_tokens is None or record.output_tokens is None:
        return admission.reserved_tokens
    return record.input_tokens + record.output_tokens
