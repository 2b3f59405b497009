"""What access control is configured with: where the key set comes from."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from access.caller import Caller
from access.key_set import KeySetError, check_no_repeats, parse_key_set
from core.env import HOUR_S, MINUTE_S, SettingsError, env_float, env_int, env_ms
from core.redis_client import check_redis_url

_RELOAD_INTERVAL_S = 2.0


@dataclass(frozen=True, slots=True)
class AccessSettings:
    """Access control is on when a key file or inline keys are given (even an empty set, which
    admits nobody), off otherwise.

    `GATEWAY_API_KEYS_FILE` (a mounted Secret) is re-read when it changes or on SIGHUP;
    `GATEWAY_API_KEYS` holds keys inline (same JSON), fixed for the process's life.
    """

    keys_file: Path | None = None
    inline_keys: Mapping[str, Caller] | None = None  # None: not configured
    reload_interval_s: float = _RELOAD_INTERVAL_S
    redis_url: str = ""  # shared limits (a single Redis or a cluster); empty: each replica alone
    limit_replicas: int = 1  # a replica's share of each limit when it decides alone
    limit_timeout_s: float = 0.05
    default_output_tokens: int = 1024  # reserved for a request that names no max_tokens

    @property
    def enabled(self) -> bool:
        return self.keys_file is not None or self.inline_keys is not None

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> AccessSettings:
        raw_file = _set_value(env, "GATEWAY_API_KEYS_FILE")
        keys_file = Path(raw_file) if raw_file is not None else None
        inline: dict[str, Caller] | None = None
        raw_inline = _set_value(env, "GATEWAY_API_KEYS")
        try:
            if raw_inline is not None:
                inline = parse_key_set(raw_inline, "GATEWAY_API_KEYS")
            if keys_file is not None:
                # Read once here so a missing or broken file stops the gateway at startup.
                source = f"GATEWAY_API_KEYS_FILE ({keys_file})"
                check_no_repeats(parse_key_set(_read(keys_file), source), inline or {}, source)
        except KeySetError as exc:
            raise SettingsError(str(exc)) from None
        defaults = cls()
        return cls(
            keys_file=keys_file,
            inline_keys=inline,
            reload_interval_s=env_float(
                env, "GATEWAY_API_KEYS_RELOAD_S", _RELOAD_INTERVAL_S, low=0.1, high=HOUR_S
            ),
            redis_url=check_redis_url("GATEWAY_REDIS_URL", env.get("GATEWAY_REDIS_URL", "")),
            limit_replicas=env_int(env, "GATEWAY_LIMIT_REPLICAS", 1, low=1, high=10_000),
            limit_timeout_s=env_ms(
                env, "GATEWAY_LIMIT_TIMEOUT_MS", defaults.limit_timeout_s, high_s=MINUTE_S
            ),
            default_output_tokens=env_int(
                env,
                "GATEWAY_LIMIT_DEFAULT_MAX_TOKENS",
                defaults.default_output_tokens,
                low=1,
                high=10_000_000,
            ),
        )


def _set_value(env: Mapping[str, str], name: str) -> str | None:
    """The variable's value, None when unset. Unlike other variables, set but blank is an
    error, not the default: the default here is access control off, and a key set emptied by a
    template must not open the gateway."""
    raw = env.get(name)
    if raw is None:
        return None
    if not raw.strip():
        raise SettingsError(
            f"{name} is set but empty: give a key set ('{{\"keys\": []}}' admits nobody), "
            "or unset it to turn access control off"
        )
    return raw.strip()


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise KeySetError(f"GATEWAY_API_KEYS_FILE ({path}) cannot be read: {exc}") from None
