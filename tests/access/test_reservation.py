"""access/reservation.py: a request no full token limit could hold is a 400 naming the field
to lower."""

from __future__ import annotations

import pytest

from access.caller import Caller, KeyLimits
from access.key_limits import caller_limits
from access.reservation import Reservation, check_fits
from core.errors import RequestTooLarge

CALLER = Caller("acme", key_id="0123456789ab", name="acme-test", limits=KeyLimits(None, 300))
LIMITS = caller_limits(CALLER)


def test_a_reservation_within_every_whole_limit_fits() -> None:
    """A whole bucket's worth passes: waiting could let it through."""
    check_fits(CALLER, LIMITS, Reservation(prompt=100, per_choice=100, choices=2, n=2))


def test_too_many_choices_for_the_whole_limit_names_n() -> None:
    """Too large only because of its n choices: a 400 naming n that says how many fit."""
    with pytest.raises(RequestTooLarge) as raised:
        check_fits(CALLER, LIMITS, Reservation(prompt=5, per_choice=50, choices=30, n=30))
    error = raised.value
    assert error.status == 400 and error.code == "request_too_large" and error.param == "n"
    assert "limit 300, requested 1505" in error.message and "n to at most 5" in error.message
    assert "API key acme-test" in error.message
    batch = Reservation(prompt=5, per_choice=50, choices=30, n=10)  # three prompts, n=10
    with pytest.raises(RequestTooLarge, match="n to at most 1") as raised:
        check_fits(CALLER, LIMITS, batch)
    assert raised.value.param == "n"


def test_a_single_choice_too_large_names_the_field_that_made_it() -> None:
    """When one choice cannot fit either, the output field the client sent; when the prompt
    alone cannot, the prompt's field (an embedding's input)."""
    output = Reservation(
        prompt=5, per_choice=400, choices=2, n=2, output_param="max_completion_tokens"
    )
    with pytest.raises(RequestTooLarge, match="max_completion_tokens to at most 147") as raised:
        check_fits(CALLER, LIMITS, output)
    assert raised.value.param == "max_completion_tokens"
    prompt = Reservation(prompt=300, per_choice=10, choices=1, prompt_param="messages")
    with pytest.raises(RequestTooLarge, match="limit 300") as raised:
        check_fits(CALLER, LIMITS, prompt)
    assert raised.value.param == "messages"
    inputs = Reservation(prompt=900, prompt_param="input")
    with pytest.raises(RequestTooLarge, match="limit 300, requested 900") as raised:
        check_fits(CALLER, LIMITS, inputs)
    assert raised.value.param == "input"
