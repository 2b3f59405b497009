"""The gateway's configuration: its own HTTP settings plus each layer's, read once from
`GATEWAY_*` environment variables and validated at startup."""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from access.settings import AccessSettings
from backends.settings import BackendSettings
from budgets.settings import BudgetSettings
from cache.settings import CacheSettings
from core.env import (
    HOUR_S,
    MINUTE_S,
    SettingsError,
    check_known_keys,
    env_choice,
    env_float,
    env_int,
    env_str,
)

__all__ = ["Settings", "SettingsError"]

_HOSTNAME = re.compile(r"(?!-)[A-Za-z0-9-]{1,63}(?<!-)(\.(?!-)[A-Za-z0-9-]{1,63}(?<!-))*\.?")


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything the gateway is configured with. Build with `Settings.from_env()`."""

    host: str = "127.0.0.1"
    port: int = 8000
    workers: int = 1
    log_level: str = "info"
    max_body_bytes: int = 4 * 1024 * 1024
    max_header_bytes: int = 64 * 1024  # request line and headers, as Envoy's 60 KiB
    header_timeout_s: float = 5.0  # to receive a whole request head (slow loris)
    max_connections: int = 4096  # open connections per worker
    max_messages: int = 2048  # messages (or Responses API items) in one request, as OpenAI
    send_timeout_s: float = 60.0  # one write to a streaming client, as nginx's send_timeout
    system_fingerprint: str = "fp_llm_gateway"
    access: AccessSettings = field(default_factory=AccessSettings)
    backends: BackendSettings = field(default_factory=BackendSettings)
    cache: CacheSettings = field(default_factory=CacheSettings)
    budgets: BudgetSettings = field(default_factory=BudgetSettings)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if environ is None else environ
        if env.get("GATEWAY_PORT", "").startswith("tcp://"):
            raise SettingsError(
                "GATEWAY_PORT is a Kubernetes service link (tcp://...), injected for a Service "
                "named `gateway`: set enableServiceLinks: false on the pod (the shipped "
                "manifests do), or name the Service otherwise"
            )
        defaults = cls()
        return cls(
            host=_host(env_str(env, "GATEWAY_HOST", defaults.host)),
            port=env_int(env, "GATEWAY_PORT", defaults.port, low=0, high=65535),
            workers=env_int(env, "GATEWAY_WORKERS", defaults.workers, low=1, high=256),
            log_level=env_choice(
                env,
                "GATEWAY_LOG_LEVEL",
                defaults.log_level,
                ("critical", "error", "warning", "info", "debug"),
            ),
            max_body_bytes=env_int(
                env, "GATEWAY_MAX_BODY_BYTES", defaults.max_body_bytes, low=1024, high=2**30
            ),
            max_header_bytes=env_int(
                env, "GATEWAY_MAX_HEADER_BYTES", defaults.max_header_bytes, low=1024, high=2**20
            ),
            header_timeout_s=env_float(
                env,
                "GATEWAY_HEADER_TIMEOUT_S",
                defaults.header_timeout_s,
                low=0.1,
                high=5 * MINUTE_S,
            ),
            max_connections=env_int(
                env, "GATEWAY_MAX_CONNECTIONS", defaults.max_connections, low=1, high=1_000_000
            ),
            max_messages=env_int(
                env, "GATEWAY_MAX_MESSAGES", defaults.max_messages, low=1, high=100_000
            ),
            send_timeout_s=env_float(
                env, "GATEWAY_SEND_TIMEOUT_S", defaults.send_timeout_s, low=0.1, high=HOUR_S
            ),
            system_fingerprint=env_str(
                env, "GATEWAY_SYSTEM_FINGERPRINT", defaults.system_fingerprint
            ),
            access=AccessSettings.from_env(env),
            backends=(backends := BackendSettings.from_env(env)),
            cache=_cache_settings(env, backends),
            budgets=BudgetSettings.from_env(env),
        )


def _cache_settings(env: Mapping[str, str], backends: BackendSettings) -> CacheSettings:
    cache = CacheSettings.from_env(env)
    check_known_keys("GATEWAY_MODEL_REVISIONS", cache.model_revisions, backends.served)
    shapes = {model: backends.answer_shape(model) for model in backends.served}
    return replace(cache, answer_shapes=shapes)


def _host(value: str) -> str:
    """An IP address or a host name to listen on; anything else stops the gateway here
    rather than in the server's own bind."""
    try:
        ipaddress.ip_address(value)
    except ValueError:
        # All-numeric labels are a mistyped IPv4 address (999.1.1.1), never a host name.
        numeric = all(label.isdigit() for label in value.rstrip(".").split("."))
        if len(value) > 253 or not _HOSTNAME.fullmatch(value) or numeric:
            raise SettingsError(
                f"GATEWAY_HOST must be an IP address or a host name, got {value!r}"
            ) from None
    return value
