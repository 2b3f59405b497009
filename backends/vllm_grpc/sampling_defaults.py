"""The model's own sampling defaults, from its `generation_config.json`.

vLLM's server (`--generation-config auto`, its default) uses the model creator's recommended
`temperature`, `top_p`, `top_k`, `min_p` and `repetition_penalty` for the fields a request
leaves out; the gateway, which samples through the engine's gRPC API (where no such default
applies), does the same. vLLM reads the file through transformers' `to_diff_dict`, which drops
values equal to `GenerationConfig`'s own defaults: `top_k: 50` is one (transformers 4.x), and
so is not applied. `max_new_tokens` is left out as vLLM leaves it out with `auto` (it caps
`max_tokens` only from `--override-generation-config`). A value out of its field's range is
ignored rather than sent for the engine to refuse on every request.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

log = logging.getLogger("gateway.backends.vllm_grpc")

_HF_TOP_K = 50  # transformers' GenerationConfig default, which `to_diff_dict` leaves out


@dataclass(frozen=True, slots=True)
class SamplingDefaults:
    """Sampling values for the fields a request omits; None: the engine's neutral default."""

    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    min_p: float | None = None
    repetition_penalty: float | None = None


NO_DEFAULTS = SamplingDefaults()


def sampling_defaults(generation_config: Mapping[str, Any]) -> SamplingDefaults:
    """The defaults a `generation_config.json` (already parsed) recommends."""
    defaults = SamplingDefaults(
        temperature=_number(generation_config, "temperature", 0.0, 2.0),
        top_p=_number(generation_config, "top_p", 0.0, 1.0, low_open=True),
        top_k=_top_k(generation_config.get("top_k")),
        min_p=_number(generation_config, "min_p", 0.0, 1.0),
        repetition_penalty=_number(
            generation_config, "repetition_penalty", 0.0, 2.0, low_open=True
        ),
    )
    if defaults != NO_DEFAULTS:
        log.info("sampling defaults from generation_config.json: %s", defaults)
    return defaults


def _number(
    config: Mapping[str, Any], key: str, low: float, high: float, *, low_open: bool = False
) -> float | None:
    value = config.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        log.warning("generation_config.json: %s=%r is not a number; ignored", key, value)
        return None
    if value < low or value > high or (low_open and value == low):
        log.warning("generation_config.json: %s=%r is out of range; ignored", key, value)
        return None
    return float(value)


def _top_k(value: Any) -> int | None:
    if value is None or value == _HF_TOP_K:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < -1:
        log.warning("generation_config.json: top_k=%r is not a valid top_k; ignored", value)
        return None
    return value
