"""What a request asks of the stand-in "model" (`SamplingSpec`) and what one choice of it
produces (`Generation`)."""

from __future__ import annotations

from dataclasses import dataclass

from standin.vllm.logprobs import TokenLogprobs
from standin.vllm.structured import Constraint


@dataclass(frozen=True, slots=True)
class SamplingSpec:
    """The sampling parameters that shape the output, with the server's defaults applied."""

    max_tokens: int | None = None
    min_tokens: int = 0
    stop: tuple[str, ...] = ()
    stop_token_ids: tuple[int, ...] = ()
    ignore_eos: bool = False
    seed: int | None = None
    n: int = 1
    logprobs: int | None = None
    prompt_logprobs: int | None = None
    include_stop_str_in_output: bool = False
    constraint: Constraint | None = None


@dataclass(frozen=True, slots=True)
class Generation:
    """One choice's output as the engine produces it.

    `token_ids` include the EOS / stop token / the token completing a stop string, as vLLM's
    do. `text` is what vLLM's detokenizer makes of them: special tokens skipped, a trailing
    incomplete character held back, cut at a matched stop string (kept when
    `include_stop_str_in_output`).
    """

    index: int
    token_ids: tuple[int, ...]
    finish_reason: str
    matched_token_id: int | None = None
    matched_stop_str: str | None = None
    text: str = ""
    logprobs: TokenLogprobs | None = None
