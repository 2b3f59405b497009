"""The stand-in's knobs: one frozen dataclass, settable from CLI flags, `GATEWAY_SIM_*` and JSON."""

from __future__ import annotations

import argparse
import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import grpc

from standin.vllm.tool_formats import TOOL_FORMATS

ENV_PREFIX = "GATEWAY_SIM_"

# Fields a running server cannot change (Control/Configure refuses them).
STARTUP_ONLY = frozenset({"host", "port", "tokenizer_dir", "reasoning", "harmony"})


def _knob(default: Any, help_text: str) -> Any:
    return field(default=default, metadata={"help": help_text})


@dataclass(frozen=True, slots=True)
class SimConfig:
    """Everything that shapes the stand-in's behaviour; see `fields_help()` for each knob."""

    host: str = _knob("127.0.0.1", "address to bind")
    port: int = _knob(0, "port to bind; 0 picks a free port")
    model: str = _knob("sim", "served model name (GetModelInfo)")
    ttft_ms: float = _knob(0.0, "time to first token, after admission")
    itl_ms: float = _knob(0.0, "inter-token latency")
    output_tokens: int = _knob(16, "natural output length in tokens before EOS")
    tokens_per_chunk: int = _knob(1, "tokens per streamed chunk")
    max_context_length: int = _knob(4096, "context window (prompt + output tokens)")
    max_concurrency: int = _knob(256, "running request slots")
    max_waiting: int = _knob(1024, "waiting queue bound; beyond it RESOURCE_EXHAUSTED")
    kv_cache_tokens: int = _knob(262144, "KV capacity behind GetLoads token_usage")
    prefix_cache: bool = _knob(True, "report cached_tokens for repeated prompt prefixes")
    prefill_ms_per_token: float = _knob(
        0.0, "prefill time per prompt token not served from the prefix cache, added to ttft"
    )
    kv_events: bool = _knob(True, "publish SubscribeKvEvents (off: it answers UNIMPLEMENTED)")
    kv_events_delay_ms: float = _knob(
        0.0, "deliver each KV event batch this long after the blocks were cached"
    )
    error_rate: float = _knob(0.0, "fraction of Generate calls failing INTERNAL before a token")
    hang_rate: float = _knob(0.0, "fraction of Generate calls producing nothing until cancelled")
    die_after_tokens: int = _knob(0, "end streams with die_code after this many tokens; 0 = off")
    die_rate: float = _knob(1.0, "fraction of Generate calls die_after_tokens applies to")
    die_code: str = _knob("INTERNAL", "gRPC status for die_after_tokens (INTERNAL, UNAVAILABLE)")
    fault_seed: int = _knob(0, "seed of the per-call fault draws")
    not_ready_ms: float = _knob(0.0, "readiness answers NOT_SERVING for this long after start")
    embedding_dim: int = _knob(384, "Embed vector size")
    embed_ms: float = _knob(0.0, "time each Embed call takes (the engine's forward pass)")
    tokenizer_dir: str = _knob("", "tokenizer directory; empty = the built-in stand-in tokenizer")
    shutdown_grace_s: float = _knob(5.0, "grace period for in-flight calls on SIGTERM (CLI)")
    tool_format: str = _knob(
        "hermes",
        f"tool-call format of answers to prompts offering tools: {', '.join(TOOL_FORMATS)}",
    )

    reasoning: bool = _knob(
        False,
        "answer as a thinking model: a <think> block first, unless the prompt closed one "
        "(enable_thinking=false), and a chat template that shows it",
    )
    harmony: bool = _knob(
        False,
        "answer as gpt-oss in its Harmony format: thinking on the analysis channel, then the "
        "answer on final or a call on commentary (whatever tool_format), with a tokenizer whose "
        "special tokens and chat template show it",
    )

    def __post_init__(self) -> None:
        _check(0 <= self.port <= 65535, "port must be in [0, 65535]")
        _check(bool(self.model), "model must not be empty")
        for name in (
            "ttft_ms",
            "itl_ms",
            "not_ready_ms",
            "shutdown_grace_s",
            "prefill_ms_per_token",
            "kv_events_delay_ms",
            "embed_ms",
        ):
            _check(getattr(self, name) >= 0, f"{name} must be >= 0")
        for name in ("error_rate", "hang_rate", "die_rate"):
            _check(0.0 <= getattr(self, name) <= 1.0, f"{name} must be in [0, 1]")
        _check(self.output_tokens >= 0, "output_tokens must be >= 0")
        _check(self.tokens_per_chunk >= 1, "tokens_per_chunk must be >= 1")
        _check(self.max_context_length >= 2, "max_context_length must be >= 2")
        _check(self.max_concurrency >= 1, "max_concurrency must be >= 1")
        _check(self.max_waiting >= 0, "max_waiting must be >= 0")
        _check(self.kv_cache_tokens >= 1, "kv_cache_tokens must be >= 1")
        _check(self.die_after_tokens >= 0, "die_after_tokens must be >= 0")
        _check(self.embedding_dim >= 1, "embedding_dim must be >= 1")
        _check(
            self.tool_format in TOOL_FORMATS,
            f"tool_format must be one of {', '.join(TOOL_FORMATS)}, got {self.tool_format!r}",
        )
        _check(
            self.die_code in grpc.StatusCode.__members__ and self.die_code != "OK",
            f"die_code must name a gRPC status other than OK, got {self.die_code!r}",
        )

    @property
    def die_status(self) -> grpc.StatusCode:
        return grpc.StatusCode[self.die_code]

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def updated(self, changes: Mapping[str, Any], *, startup: bool = True) -> SimConfig:
        """A copy with `changes` applied (JSON-ish values); ValueError names the bad field."""
        kinds = field_types()
        values: dict[str, Any] = {}
        for name, raw in changes.items():
            if name not in kinds:
                raise ValueError(f"unknown sim setting {name!r}")
            if not startup and name in STARTUP_ONLY:
                raise ValueError(f"{name!r} cannot change while the server runs")
            values[name] = _coerce(name, kinds[name], raw)
        return dataclasses.replace(self, **values)

    @classmethod
    def from_env_and_args(
        cls,
        args: argparse.Namespace | None = None,
        env: Mapping[str, str] | None = None,
    ) -> SimConfig:
        """Defaults, overridden by `GATEWAY_SIM_<FIELD>` variables, overridden by CLI flags."""
        environ = os.environ if env is None else env
        changes: dict[str, Any] = {}
        for name in field_types():
            value = environ.get(ENV_PREFIX + name.upper())
            if value is not None:
                changes[name] = value
        if args is not None:
            for name in field_types():
                value = getattr(args, name, None)
                if value is not None:
                    changes[name] = value
        return cls().updated(changes)


def field_types() -> dict[str, type]:
    """Each setting's name and value type, in declaration order."""
    kinds: dict[str, type] = {}
    for item in dataclasses.fields(SimConfig):
        default = item.default
        kinds[item.name] = type(default)
    return kinds


def fields_help() -> dict[str, tuple[Any, str]]:
    """Each setting's default and description, for CLI help and documentation."""
    return {
        item.name: (item.default, item.metadata["help"]) for item in dataclasses.fields(SimConfig)
    }


def _check(condition: bool, message: str) -> None:
    if not condition:
        raise ValueError(message)


_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


def parse_bool(text: str) -> bool:
    """1/true/yes/on or 0/false/no/off, any case; ValueError otherwise."""
    value = text.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ValueError(f"expected true or false, got {text!r}")


def _coerce(name: str, kind: type, raw: Any) -> Any:
    if isinstance(raw, str) and kind is not str:
        try:
            return parse_bool(raw) if kind is bool else kind(raw.strip())
        except ValueError:
            raise ValueError(f"{name} expects a {kind.__name__}, got {raw!r}") from None
    if kind is float and isinstance(raw, int | float) and not isinstance(raw, bool):
        return float(raw)
    if isinstance(raw, kind) and (kind is bool or not isinstance(raw, bool)):
        return raw
    raise ValueError(f"{name} expects a {kind.__name__}, got {raw!r}")
