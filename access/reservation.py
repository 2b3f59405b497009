"""The tokens a request reserves against its caller's token limits, and the 400 for a request
no full limit could ever hold."""

from __future__ import annotations

from typing import NamedTuple

from access.caller import Caller
from access.gcra import Limit
from access.key_limits import whose
from core.errors import RequestTooLarge


class Reservation(NamedTuple):
    """The tokens a request reserves: its prompt (estimated) and up to `per_choice` for each
    of its `choices` (`n` for each prompt), with the fields the client sent for each, so a
    request too large for a whole limit can name the one to lower."""

    prompt: int
    per_choice: int = 0
    choices: int = 0
    n: int = 1
    prompt_param: str = "prompt"
    output_param: str = "max_tokens"

    @property
    def tokens(self) -> int:
        return self.prompt + self.per_choice * self.choices


def check_fits(caller: Caller, limits: tuple[Limit, ...], reservation: Reservation) -> None:
    """A reservation no full bucket of a token limit could hold is a 400, since waiting could
    never let it through: naming `n` where a single choice for each prompt would fit, else the
    output field where a token for each choice would, else the prompt's field."""
    tokens = reservation.tokens
    for limit in limits:
        if limit.unit == "tokens" and tokens > limit.amount:
            raise _too_large(caller, limit, reservation)


def _too_large(caller: Caller, limit: Limit, reservation: Reservation) -> RequestTooLarge:
    prompt, per_choice, choices, n = reservation[:4]
    room = limit.amount - prompt  # what the limit leaves beside the prompt
    per_n = per_choice * (choices // n) if n else 0  # the tokens one more n adds
    if n > 1 and 0 < per_n <= room:
        param = "n"
        advice = f"Lower n to at most {room // per_n}, or {reservation.output_param}."
    elif choices and choices <= room:
        param = reservation.output_param
        each = f" for each of {choices} choices" if choices > 1 else ""
        advice = f"Lower {param} to at most {room // choices}{each}."
    else:
        param = reservation.prompt_param
        advice = f"Shorten {param}."
    if not choices:
        parts = f"about {prompt} for the input"
    elif choices == 1:
        parts = f"about {prompt} for the prompt and {per_choice} for the answer"
    else:
        parts = f"about {prompt} for the prompt and {per_choice} for each of {choices} choices"
    return RequestTooLarge(
        f"Request too large for {limit.name.replace('_', ' ')} of {whose(caller, limit)}: "
        f"limit {limit.amount}, requested {reservation.tokens} ({parts}). {advice}",
        param=param,
    )
