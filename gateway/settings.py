"""Configuration read once from `GATEWAY_*` environment variables and validated at startup."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from gateway.budget_settings import BudgetSettings
from gateway.cache_settings import CacheSettings
from gateway.env import SettingsError, env_choice, env_float, env_int, env_map

__all__ = ["ModelSpec", "ReplicaSpec", "Settings", "SettingsError"]


@dataclass(frozen=True, slots=True)
class ReplicaSpec:
    """One backend replica: `grpc://host:port` or `http(s)://host:port/v1`."""

    url: str

    @property
    def scheme(self) -> str:
        return self.url.split("://", 1)[0]


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """A served model and the replicas that serve it."""

    name: str
    replicas: tuple[ReplicaSpec, ...]


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything the gateway is configured with. Build with `Settings.from_env()`."""

    host: str = "127.0.0.1"
    port: int = 8000
    workers: int = 1
    log_level: str = "info"
    models: tuple[ModelSpec, ...] = ()
    max_body_bytes: int = 4 * 1024 * 1024
    grpc_channels: int = 2
    http_connections: int = 256
    tokenizer_dirs: Mapping[str, Path] = field(default_factory=dict)
    tokenizer_cache_dir: Path = Path.home() / ".cache" / "llm-gateway" / "tokenizers"
    health_interval_s: float = 2.0
    health_timeout_s: float = 1.0
    retry_attempts: int = 1
    system_fingerprint: str = "fp_llm_gateway"
    cache: CacheSettings = field(default_factory=CacheSettings)
    budgets: BudgetSettings = field(default_factory=BudgetSettings)

    @property
    def embedded_sim(self) -> bool:
        """No backends configured: `serve` runs the vLLM stand-in in-process as model `sim`."""
        return not self.models

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if environ is None else environ
        defaults = cls()
        return cls(
            host=env.get("GATEWAY_HOST", defaults.host),
            port=env_int(env, "GATEWAY_PORT", defaults.port, low=0, high=65535),
            workers=env_int(env, "GATEWAY_WORKERS", defaults.workers, low=1, high=256),
            log_level=env_choice(
                env,
                "GATEWAY_LOG_LEVEL",
                defaults.log_level,
                ("critical", "error", "warning", "info", "debug"),
            ),
            models=_parse_backends(env.get("GATEWAY_BACKENDS", "")),
            max_body_bytes=env_int(
                env, "GATEWAY_MAX_BODY_BYTES", defaults.max_body_bytes, low=1024
            ),
            grpc_channels=env_int(
                env, "GATEWAY_GRPC_CHANNELS", defaults.grpc_channels, low=1, high=64
            ),
            http_connections=env_int(
                env, "GATEWAY_HTTP_CONNECTIONS", defaults.http_connections, low=1, high=100_000
            ),
            tokenizer_dirs={
                model: Path(d) for model, d in env_map(env, "GATEWAY_TOKENIZER_DIRS").items()
            },
            tokenizer_cache_dir=Path(
                env.get("GATEWAY_TOKENIZER_CACHE_DIR", str(defaults.tokenizer_cache_dir))
            ),
            health_interval_s=env_float(
                env, "GATEWAY_HEALTH_INTERVAL_S", defaults.health_interval_s, low=0.05
            ),
            health_timeout_s=env_float(
                env, "GATEWAY_HEALTH_TIMEOUT_S", defaults.health_timeout_s, low=0.01
            ),
            retry_attempts=env_int(
                env, "GATEWAY_RETRY_ATTEMPTS", defaults.retry_attempts, low=0, high=5
            ),
            system_fingerprint=env.get("GATEWAY_SYSTEM_FINGERPRINT", defaults.system_fingerprint),
            cache=CacheSettings.from_env(env),
            budgets=BudgetSettings.from_env(env),
        )


def _parse_backends(raw: str) -> tuple[ModelSpec, ...]:
    """Parse `MODEL=URL[,URL...][;MODEL=URL...]`."""
    models: list[ModelSpec] = []
    seen: set[str] = set()
    for entry in filter(None, (part.strip() for part in raw.split(";"))):
        name, sep, urls = entry.partition("=")
        name = name.strip()
        if not sep or not name:
            raise SettingsError(
                f"GATEWAY_BACKENDS entry {entry!r} must look like MODEL=URL[,URL...]"
            )
        if name in seen:
            raise SettingsError(f"GATEWAY_BACKENDS names model {name!r} twice")
        seen.add(name)
        replicas = []
        for url in filter(None, (u.strip() for u in urls.split(","))):
            scheme, sep, rest = url.partition("://")
            if not sep or scheme not in ("grpc", "http", "https") or not rest:
                raise SettingsError(
                    f"GATEWAY_BACKENDS: replica {url!r} of model {name!r} must be "
                    "grpc://host:port or http(s)://host:port/v1"
                )
            replicas.append(ReplicaSpec(url.rstrip("/")))
        if not replicas:
            raise SettingsError(f"GATEWAY_BACKENDS: model {name!r} has no replica URL")
        models.append(ModelSpec(name, tuple(replicas)))
    return tuple(models)
