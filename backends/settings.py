"""What the backends layer is configured with: the served models, their replicas, connection
pools and health polling, read from `GATEWAY_*` variables."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from backends.outliers import OutlierPolicy
from backends.reasoning.choice import FORMATS as REASONING_FORMATS
from backends.reasoning.choice import NO_REASONING
from backends.replica_urls import ReplicaSpec, parse_replica_url, redact
from backends.routes import ModelRoutes, parse_routes
from backends.silence import HangPolicy
from backends.tool_calls.choice import FORMATS as TOOL_FORMATS
from core.env import (
    DAY_S,
    HOUR_S,
    MINUTE_S,
    SettingsError,
    check_dir,
    check_known_keys,
    env_bool,
    env_choice,
    env_dir,
    env_float,
    env_int,
    env_map,
    env_ms,
)

EMBEDDED = "embedded"
"""`GATEWAY_BACKENDS=embedded`: the built-in vLLM stand-in serves model `sim` (a demo)."""

EMBEDDED_MODEL = "sim"

TOKENIZER_FILE = "tokenizer.json"
"""The file a tokenizer directory must hold (fast tokenizers only; see `tokenizer_store`)."""


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """A served model and the replicas that serve it."""

    name: str
    replicas: tuple[ReplicaSpec, ...]


@dataclass(frozen=True, slots=True)
class BackendSettings:
    """The model servers and how they are reached. `embedded` asks for the built-in stand-in
    instead of `models`; one of the two is required when read from the environment."""

    models: tuple[ModelSpec, ...] = ()
    embedded: bool = False
    grpc_channels: int = 2
    http_connections: int = 256
    tokenizer_dirs: Mapping[str, Path] = field(default_factory=dict)
    tokenizer_cache_dir: Path = Path.home() / ".cache" / "llm-gateway" / "tokenizers"
    health_interval_s: float = 2.0
    health_timeout_s: float = 1.0
    health_failures: int = 3
    retry_attempts: int = 1
    slow_start_s: float = 30.0  # a replica that turns healthy ramps up over this (0: off)
    outliers: OutlierPolicy = field(default_factory=OutlierPolicy)
    hangs: HangPolicy = field(default_factory=HangPolicy)  # probing silent replicas
    watch_whole_answers: bool = False  # gRPC: stream whole answers on the wire to watch them
    dns_refresh_s: float = 5.0  # how often `+dns` replica sets are re-resolved
    prefix_routing_weight: float = 0.0  # cached share of the prompt against load (0: off)
    routes: ModelRoutes = field(default_factory=ModelRoutes)  # public name -> versions
    tool_parsers: Mapping[str, str] = field(default_factory=dict)  # model -> tool-call format
    # model -> reasoning format, or "none" to turn off recognising it from the chat template
    reasoning_parsers: Mapping[str, str] = field(default_factory=dict)
    # gRPC: special tokens' text in messages is plain text (off: control tokens, as in vLLM)
    split_special_tokens: bool = True
    # gRPC: "auto" samples with generation_config.json's defaults, "vllm" without (vLLM's flag)
    generation_config: str = "auto"

    @property
    def served(self) -> list[str]:
        """The model names requests may reach: those of GATEWAY_BACKENDS and the routes'."""
        names = [EMBEDDED_MODEL] if self.embedded else [spec.name for spec in self.models]
        return [*names, *self.routes.routes]

    def answer_shape(self, model: str) -> str:
        """What of this configuration shapes `model`'s prompt or how its answer is read, for
        the cache keys: an answer made under other settings must not serve (one parsed into
        reasoning where the thinking now stays in the text, or a prompt whose special tokens
        were control tokens). The tokenizer's directory stands for its chat template."""
        directory = self.tokenizer_dirs.get(model)
        return "|".join(
            (
                self.tool_parsers.get(model, ""),
                self.reasoning_parsers.get(model, ""),
                "split" if self.split_special_tokens else "control",
                self.generation_config,
                "" if directory is None else str(directory),
            )
        )

    @property
    def fetches_tokenizers(self) -> bool:
        """A model's tokenizer comes from its gRPC replicas (`GetTokenizer`, the embedded
        stand-in's too) into `tokenizer_cache_dir`, rather than from GATEWAY_TOKENIZER_DIRS."""
        if self.embedded:
            return EMBEDDED_MODEL not in self.tokenizer_dirs
        return any(
            spec.name not in self.tokenizer_dirs
            and any(replica.scheme.startswith("grpc") for replica in spec.replicas)
            for spec in self.models
        )

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> BackendSettings:
        defaults = cls()
        raw = env.get("GATEWAY_BACKENDS", "").strip()
        if not raw:
            raise SettingsError(
                "GATEWAY_BACKENDS is not set: name the model servers "
                "(MODEL=grpc://host:port[,URL...][;MODEL=...]), or set GATEWAY_BACKENDS=embedded "
                "(or `gateway serve --embedded`) to run the built-in demo stand-in"
            )
        embedded = raw.lower() == EMBEDDED
        models = () if embedded else parse_backends(raw)
        served = [EMBEDDED_MODEL] if embedded else [spec.name for spec in models]
        tokenizer_dirs = _tokenizer_dirs(env, served)
        return cls(
            models=models,
            embedded=embedded,
            grpc_channels=env_int(
                env, "GATEWAY_GRPC_CHANNELS", defaults.grpc_channels, low=1, high=64
            ),
            http_connections=env_int(
                env, "GATEWAY_HTTP_CONNECTIONS", defaults.http_connections, low=1, high=100_000
            ),
            tokenizer_dirs=tokenizer_dirs,
            tokenizer_cache_dir=env_dir(
                env, "GATEWAY_TOKENIZER_CACHE_DIR", defaults.tokenizer_cache_dir
            ),
            health_interval_s=env_float(
                env, "GATEWAY_HEALTH_INTERVAL_S", defaults.health_interval_s, low=0.05, high=HOUR_S
            ),
            health_timeout_s=env_float(
                env, "GATEWAY_HEALTH_TIMEOUT_S", defaults.health_timeout_s, low=0.01, high=MINUTE_S
            ),
            health_failures=env_int(
                env, "GATEWAY_HEALTH_FAILURES", defaults.health_failures, low=1, high=100
            ),
            retry_attempts=env_int(
                env, "GATEWAY_RETRY_ATTEMPTS", defaults.retry_attempts, low=0, high=5
            ),
            slow_start_s=env_float(
                env, "GATEWAY_SLOW_START_S", defaults.slow_start_s, low=0.0, high=HOUR_S
            ),
            outliers=_outlier_policy(env, defaults.outliers),
            hangs=_hang_policy(env, defaults.hangs),
            watch_whole_answers=env_bool(
                env, "GATEWAY_GRPC_WATCH_WHOLE_ANSWERS", defaults.watch_whole_answers
            ),
            dns_refresh_s=env_float(
                env, "GATEWAY_DNS_REFRESH_S", defaults.dns_refresh_s, low=0.1, high=HOUR_S
            ),
            prefix_routing_weight=env_float(
                env,
                "GATEWAY_PREFIX_ROUTING_WEIGHT",
                defaults.prefix_routing_weight,
                low=0.0,
                high=10_000,
            ),
            routes=parse_routes(env.get("GATEWAY_MODEL_ROUTES", ""), served),
            tool_parsers=_tool_parsers(env, served),
            reasoning_parsers=_reasoning_parsers(env, served),
            split_special_tokens=env_bool(
                env, "GATEWAY_SPLIT_SPECIAL_TOKENS", defaults.split_special_tokens
            ),
            generation_config=env_choice(
                env, "GATEWAY_GENERATION_CONFIG", defaults.generation_config, ("auto", "vllm")
            ),
        )


def _outlier_policy(env: Mapping[str, str], defaults: OutlierPolicy) -> OutlierPolicy:
    return OutlierPolicy(
        consecutive_failures=env_int(
            env, "GATEWAY_OUTLIER_FAILURES", defaults.consecutive_failures, low=0, high=1000
        ),
        ejection_s=env_float(
            env, "GATEWAY_OUTLIER_EJECTION_S", defaults.ejection_s, low=0.1, high=DAY_S
        ),
        max_ejection_s=env_float(
            env, "GATEWAY_OUTLIER_MAX_EJECTION_S", defaults.max_ejection_s, low=0.1, high=DAY_S
        ),
    )


def _hang_policy(env: Mapping[str, str], defaults: HangPolicy) -> HangPolicy:
    return HangPolicy(
        enabled=env_bool(env, "GATEWAY_HANG_PROBE", defaults.enabled),
        factor=env_float(env, "GATEWAY_HANG_PROBE_FACTOR", defaults.factor, low=1.0, high=1000),
        token_allowance_s=env_ms(
            env, "GATEWAY_HANG_PROBE_MS_PER_TOKEN", defaults.token_allowance_s, high_s=MINUTE_S
        ),
    )


def _tokenizer_dirs(env: Mapping[str, str], served: Collection[str]) -> dict[str, Path]:
    """GATEWAY_TOKENIZER_DIRS, each an existing directory with a tokenizer file: checked here,
    not when the model's first replica loads it (which would leave the model unready)."""
    name = "GATEWAY_TOKENIZER_DIRS"
    raw = env_map(env, name)
    check_known_keys(name, raw, served)
    dirs: dict[str, Path] = {}
    for model, value in raw.items():
        directory = check_dir(f"{name} (model {model!r})", Path(value), must_exist=True)
        if not (directory / TOKENIZER_FILE).is_file():
            raise SettingsError(
                f"{name}: the directory of model {model!r}, {directory}, has no "
                f"{TOKENIZER_FILE} (name a Hugging Face fast tokenizer's directory)"
            )
        dirs[model] = directory
    return dirs


def _tool_parsers(env: Mapping[str, str], served: Collection[str]) -> dict[str, str]:
    parsers = env_map(env, "GATEWAY_TOOL_PARSERS")
    check_known_keys("GATEWAY_TOOL_PARSERS", parsers, served)
    for model, name in parsers.items():
        if name not in TOOL_FORMATS:
            raise SettingsError(
                f"GATEWAY_TOOL_PARSERS: model {model!r} names format {name!r}; "
                f"known: {', '.join(TOOL_FORMATS)}"
            )
    return parsers


def _reasoning_parsers(env: Mapping[str, str], served: Collection[str]) -> dict[str, str]:
    parsers = env_map(env, "GATEWAY_REASONING_PARSERS")
    check_known_keys("GATEWAY_REASONING_PARSERS", parsers, served)
    for model, name in parsers.items():
        if name != NO_REASONING and name not in REASONING_FORMATS:
            raise SettingsError(
                f"GATEWAY_REASONING_PARSERS: model {model!r} names format {name!r}; "
                f"known: {', '.join((*REASONING_FORMATS, NO_REASONING))}"
            )
    return parsers


def parse_backends(raw: str) -> tuple[ModelSpec, ...]:
    """Parse `MODEL=URL[,URL...][;MODEL=URL...]`."""
    models: list[ModelSpec] = []
    seen: set[str] = set()
    for entry in filter(None, (part.strip() for part in raw.split(";"))):
        name, sep, urls = entry.partition("=")
        name = name.strip()
        if not sep or not name:
            raise SettingsError(
                f"GATEWAY_BACKENDS entry {redact(entry)!r} must look like MODEL=URL[,URL...]"
            )
        if name in seen:
            raise SettingsError(f"GATEWAY_BACKENDS names model {name!r} twice")
        seen.add(name)
        if not urls.strip():
            raise SettingsError(f"GATEWAY_BACKENDS: model {name!r} has no replica URL")
        replicas: list[ReplicaSpec] = []
        for url in (u.strip() for u in urls.split(",")):
            if not url:
                raise SettingsError(f"GATEWAY_BACKENDS: model {name!r} has an empty replica URL")
            replica = parse_replica_url(url, name)
            if replica.url in (r.url for r in replicas):
                raise SettingsError(
                    f"GATEWAY_BACKENDS: model {name!r} names replica {replica.url!r} twice"
                )
            replicas.append(replica)
        models.append(ModelSpec(name, tuple(replicas)))
    return tuple(models)
