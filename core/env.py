"""Typed readers for environment variables; each error names its variable."""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping


class SettingsError(ValueError):
    """A configuration value is invalid; the message names the variable."""


def env_str(env: Mapping[str, str], name: str, default: str) -> str:
    """A string setting, stripped; empty or blank means the default, as for every reader."""
    return env.get(name, "").strip() or default


def env_int(env: Mapping[str, str], name: str, default: int, *, low: int, high: int = 2**62) -> int:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise SettingsError(f"{name} must be an integer, got {raw!r}") from None
    if not low <= value <= high:
        raise SettingsError(f"{name} must be between {low} and {high}, got {value}")
    return value


def env_float(
    env: Mapping[str, str], name: str, default: float, *, low: float, high: float = float("inf")
) -> float:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise SettingsError(f"{name} must be a number, got {raw!r}") from None
    if not math.isfinite(value):  # an infinite time or size is never meant, and breaks timers
        raise SettingsError(f"{name} must be a finite number, got {raw!r}")
    if not low <= value <= high:
        bounds = f"at least {low:g}" if math.isinf(high) else f"between {low:g} and {high:g}"
        raise SettingsError(f"{name} must be {bounds}, got {raw!r}")
    return value


def env_ms(env: Mapping[str, str], name: str, default_s: float) -> float:
    """A duration given in milliseconds, returned in seconds."""
    return env_float(env, name, default_s * 1000, low=1) / 1000


def env_bool(env: Mapping[str, str], name: str, default: bool) -> bool:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    value = raw.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise SettingsError(f"{name} must be true or false (or on/off, yes/no, 1/0), got {raw!r}")


def env_choice(env: Mapping[str, str], name: str, default: str, options: tuple[str, ...]) -> str:
    value = env.get(name, default).strip().lower() or default
    if value not in options:
        raise SettingsError(f"{name} must be one of {', '.join(options)}; got {value!r}")
    return value


def env_map(env: Mapping[str, str], name: str) -> dict[str, str]:
    """Parse `KEY=VALUE[;KEY=VALUE...]`."""
    result: dict[str, str] = {}
    for entry in filter(None, (part.strip() for part in env.get(name, "").split(";"))):
        key, sep, value = entry.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise SettingsError(f"{name} entry {entry!r} must look like KEY=VALUE")
        if key.strip() in result:  # which one was meant? the last would silently win
            raise SettingsError(f"{name} names {key.strip()!r} twice")
        result[key.strip()] = value.strip()
    return result


def check_known_keys(name: str, keys: Iterable[str], known: Collection[str]) -> None:
    """Every key of the map variable `name` is one of `known` (a model of GATEWAY_BACKENDS, say):
    a setting for a name nothing serves would be silently ignored."""
    unknown = sorted(set(keys) - set(known))
    if unknown:
        raise SettingsError(
            f"{name} names {', '.join(map(repr, unknown))}, which GATEWAY_BACKENDS does not "
            f"serve (it serves {', '.join(map(repr, sorted(known)))})"
        )
