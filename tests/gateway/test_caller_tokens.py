"""A request's tokens against its caller's limits: the cap, the reservation, the charge."""

from __future__ import annotations

import time

import orjson
import pytest

from access.caller import Caller, KeyLimits
from access.limiter import Admission
from access.reservation import Reservation
from core.errors import InvalidRequest
from core.protocol import ChatCompletionRequest, CompletionRequest, EmbeddingRequest
from core.request_parsing import parse_request
from core.token_estimate import prompt_tokens
from gateway.caller_tokens import (
    check_max_tokens,
    input_reservation,
    output_ceiling,
    reservation,
    used_tokens,
    within_ceiling,
)
from obs.request_record import RequestRecord


def _body(max_tokens: int | None = None) -> ChatCompletionRequest:
    payload: dict[str, object] = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    if max_tokens is not None:
        payload["max_tokens"] = max_tokens
    return parse_request(orjson.dumps(payload), ChatCompletionRequest)


def _completion(max_tokens: int | None = None) -> CompletionRequest:
    payload: dict[str, object] = {"model": "m", "prompt": "hi"}
    if max_tokens is not None:
        payload["max_tokens"] = max_tokens
    return parse_request(orjson.dumps(payload), CompletionRequest)


def _within(
    body: ChatCompletionRequest | CompletionRequest, raw: bytes, caller: Caller
) -> tuple[ChatCompletionRequest | CompletionRequest, bytes]:
    return within_ceiling(body, raw, output_ceiling(body, caller))


def test_asking_for_more_than_the_key_allows_names_max_tokens() -> None:
    """Above the key's cap is a 400 naming the parameter; at it, or without a cap, passes."""
    capped = Caller("t", limits=KeyLimits(max_tokens=100))
    with pytest.raises(InvalidRequest) as raised:
        check_max_tokens(_body(101), capped)
    assert raised.value.param == "max_tokens"
    check_max_tokens(_body(100), capped)
    check_max_tokens(_body(10_000), Caller("t"))


def test_a_batch_is_held_to_the_key_cap_for_each_choice() -> None:
    """The key's cap bounds each choice of a batch as of a single prompt: above it is a 400
    naming max_tokens, and leaving it out runs every choice at the cap."""
    capped = Caller("t", limits=KeyLimits(max_tokens=8))
    raw = orjson.dumps({"model": "m", "prompt": ["a", "b"], "max_tokens": 9})
    with pytest.raises(InvalidRequest) as raised:
        check_max_tokens(parse_request(raw, CompletionRequest), capped)
    assert raised.value.param == "max_tokens"
    raw = orjson.dumps({"model": "m", "prompt": ["a", "b"], "max_tokens": None})
    body, sent = _within(parse_request(raw, CompletionRequest), raw, capped)
    assert body.max_output_tokens == 8 and orjson.loads(sent)["prompt"] == ["a", "b"]


def test_the_cap_error_names_the_field_sent() -> None:
    """max_completion_tokens over the cap is a 400 naming max_completion_tokens."""
    payload = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    body = parse_request(
        orjson.dumps({**payload, "max_completion_tokens": 101}), ChatCompletionRequest
    )
    with pytest.raises(InvalidRequest) as raised:
        check_max_tokens(body, Caller("t", limits=KeyLimits(max_tokens=100)))
    assert raised.value.param == "max_completion_tokens"
    assert "max_completion_tokens is 101" in raised.value.message


def test_a_completions_default_is_no_cap_violation() -> None:
    """A completion that sets no max_tokens runs at its default of 16, or at a lower cap."""
    raw = orjson.dumps({"model": "m", "prompt": "hi"})
    check_max_tokens(_completion(), Caller("t", limits=KeyLimits(max_tokens=8)))
    low = Caller("t", limits=KeyLimits(max_tokens=8))
    body, sent = _within(_completion(), raw, low)
    assert body.max_output_tokens == 8 and orjson.loads(sent)["max_tokens"] == 8
    high = Caller("t", limits=KeyLimits(max_tokens=50))
    assert _within(_completion(), raw, high) == (_completion(), raw)


def test_leaving_max_tokens_out_does_not_lift_the_key_cap() -> None:
    """A request naming no max_tokens runs at its key's cap, in the raw body sent on too; one
    that names it, or a key without a cap, is left as it is."""
    capped = Caller("t", limits=KeyLimits(max_tokens=50))
    raw = orjson.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]})
    body, sent = _within(_body(), raw, capped)
    assert body.max_output_tokens == 50 and orjson.loads(sent)["max_tokens"] == 50
    assert _within(_body(20), raw, capped) == (_body(20), raw)
    assert _within(_body(), raw, Caller("t")) == (_body(), raw)


def test_the_reservation_is_the_prompt_and_the_most_it_may_generate() -> None:
    """The request's own cap, else the key's, else the default."""
    body = _body()
    prompt = prompt_tokens(body)
    assert reservation(_body(50), Caller("t"), 256).tokens == prompt + 50
    assert (
        reservation(body, Caller("t", limits=KeyLimits(max_tokens=80)), 256).tokens == prompt + 80
    )
    assert reservation(body, Caller("t"), 256).tokens == prompt + 256


def test_a_default_reservation_fits_the_smallest_token_limit() -> None:
    """Without a maximum, the reservation is clipped to what the key's or tenant's smallest
    token limit leaves beside the prompt; a named maximum is not clipped."""
    body = _body()
    prompt = prompt_tokens(body)
    small = Caller("t", limits=KeyLimits(tokens_per_minute=300))
    assert reservation(body, small, 1024).tokens == 300
    tenant = Caller("t", tenant_limits=KeyLimits(tokens_per_day=prompt + 40))
    assert reservation(body, tenant, 1024).tokens == prompt + 40
    assert reservation(_body(1000), small, 1024).tokens == prompt + 1000


def test_a_batch_reserves_every_prompt_and_every_choice() -> None:
    """A batch of prompts reserves all its prompts and the most each choice of each prompt
    may generate (n times the prompts); without a maximum, the default for each choice, all
    of them clipped together to what the smallest token limit leaves."""
    raw = orjson.dumps({"model": "m", "prompt": ["a" * 40, "b" * 80], "n": 2, "max_tokens": 5})
    body = parse_request(raw, CompletionRequest)
    assert reservation(body, Caller("t"), 256).tokens == 30 + 4 * 5
    chat = parse_request(_chat_raw(n=3, max_tokens=7), ChatCompletionRequest)
    assert reservation(chat, Caller("t"), 256).tokens == prompt_tokens(chat) + 3 * 7
    unnamed = parse_request(_chat_raw(n=3), ChatCompletionRequest)
    small = Caller("t", limits=KeyLimits(tokens_per_minute=300))
    reserved = reservation(unnamed, small, 1024).tokens
    assert prompt_tokens(unnamed) < reserved <= 300


def test_the_reservation_names_what_the_client_can_lower() -> None:
    """The reservation says how it was made (prompt, tokens for each choice, n) and which
    fields the client sent for each, so a 400 can name the one to lower."""
    chat = parse_request(_chat_raw(n=30, max_completion_tokens=50), ChatCompletionRequest)
    prompt = prompt_tokens(chat)
    assert reservation(chat, Caller("t"), 256) == Reservation(
        prompt, 50, 30, 30, "messages", "max_completion_tokens"
    )
    raw = orjson.dumps({"model": "m", "prompt": ["a", "b", "c"], "n": 2, "max_tokens": 5})
    batch = reservation(parse_request(raw, CompletionRequest), Caller("t"), 256)
    assert (batch.choices, batch.n, batch.prompt_param, batch.output_param) == (
        6,
        2,
        "prompt",
        "max_tokens",
    )
    capped = Caller("t", limits=KeyLimits(max_tokens=8, tokens_per_minute=300))
    many = parse_request(_chat_raw(n=40), ChatCompletionRequest)
    assert reservation(many, capped, 256)[1:] == (8, 40, 40, "messages", "max_tokens")
    embed = parse_request(orjson.dumps({"model": "m", "input": ["abcd"] * 3}), EmbeddingRequest)
    assert input_reservation(embed) == Reservation(3, prompt_param="input")


def _chat_raw(**fields: object) -> bytes:
    return orjson.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}], **fields})


def test_a_stream_without_usage_is_charged_its_reservation() -> None:
    """A finished stream is charged what it used; one that ended without usage, all it
    reserved."""
    admission = Admission(limited=True, reserved_tokens=300)
    record = RequestRecord("POST", "/v1/chat/completions", time.monotonic(), 0)
    assert used_tokens(record, admission) == 300
    record.input_tokens, record.output_tokens = 12, 30
    assert used_tokens(record, admission) == 42


def test_leaving_max_tokens_out_does_not_lift_the_token_limits() -> None:
    """Under a 300-token-a-minute key, a request naming no maximum runs to what the limit
    leaves beside its prompt (one used 3,625 tokens of it); under a tenant's day limit, the
    smaller bound wins; each of n choices gets its share; a named maximum is left as sent."""
    raw = orjson.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]})
    prompt = prompt_tokens(_body())
    minute = Caller("t", limits=KeyLimits(tokens_per_minute=300))
    body, sent = _within(_body(), raw, minute)
    assert body.max_output_tokens == orjson.loads(sent)["max_tokens"] == 300 - prompt
    both = Caller(
        "t", limits=KeyLimits(max_tokens=500), tenant_limits=KeyLimits(tokens_per_day=200)
    )
    assert output_ceiling(_body(), both) == 200 - prompt
    n = parse_request(orjson.dumps({**orjson.loads(raw), "n": 3}), ChatCompletionRequest)
    assert output_ceiling(n, minute) == (300 - prompt) // 3
    assert output_ceiling(_body(20), minute) is None
    assert output_ceiling(_body(), Caller("t")) is None


def test_min_tokens_above_the_ceiling_names_min_tokens() -> None:
    """A request whose `min_tokens` its key's bounds cannot hold is a 400 naming it, before
    any backend work (it came back from the backend naming a max_tokens never sent)."""
    payload = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "min_tokens": 60}
    body = parse_request(orjson.dumps(payload), ChatCompletionRequest)
    with pytest.raises(InvalidRequest) as raised:
        output_ceiling(body, Caller("t", limits=KeyLimits(max_tokens=50)))
    assert raised.value.param == "min_tokens" and "min_tokens is 60" in raised.value.message
    assert output_ceiling(body, Caller("t", limits=KeyLimits(max_tokens=60))) == 60
