"""Typed readers for environment variables; each error names its variable."""

from __future__ import annotations

import contextlib
import math
import tempfile
from collections.abc import Collection, Iterable, Mapping
from pathlib import Path


class SettingsError(ValueError):
    """A configuration value is invalid; the message names the variable."""


def env_str(env: Mapping[str, str], name: str, default: str) -> str:
    """A string setting, stripped; empty or blank means the default, as for every reader."""
    return env.get(name, "").strip() or default


MINUTE_S = 60
HOUR_S = 3600
DAY_S = 24 * HOUR_S
WEEK_S = 7 * DAY_S
YEAR_S = 365 * DAY_S
"""Upper bounds of durations. Every number reader takes one: without it a value such as 1e300
passes and then overflows a timer or makes the gateway useless (a health probe a century
apart), and the refusal states the whole range."""


def env_int(env: Mapping[str, str], name: str, default: int, *, low: int, high: int) -> int:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(_no_grouping(raw))
    except ValueError:
        raise SettingsError(
            f"{name} must be an integer from {low} to {high}, got {raw!r}"
        ) from None
    if not low <= value <= high:
        raise SettingsError(f"{name} must be between {low} and {high}, got {value}")
    return value


def env_float(
    env: Mapping[str, str], name: str, default: float, *, low: float, high: float
) -> float:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(_no_grouping(raw))
    except ValueError:
        raise SettingsError(
            f"{name} must be a number from {_num(low)} to {_num(high)}, got {raw!r}"
        ) from None
    if not math.isfinite(value):  # an infinite time or size is never meant, and breaks timers
        raise SettingsError(f"{name} must be a finite number, got {raw!r}")
    if not low <= value <= high:
        raise SettingsError(f"{name} must be between {_num(low)} and {_num(high)}, got {raw!r}")
    return value


def _no_grouping(raw: str) -> str:
    """`raw`, unless it has Python's digit grouping (`1_0` would mean 10): a ValueError."""
    if "_" in raw:
        raise ValueError(raw)
    return raw


def env_ms(env: Mapping[str, str], name: str, default_s: float, *, high_s: float) -> float:
    """A duration given in milliseconds (1 ms to `high_s` seconds), returned in seconds."""
    return env_float(env, name, default_s * 1000, low=1, high=high_s * 1000) / 1000


def _num(value: float) -> str:
    """A bound as people write it: 86400000, not 8.64e+07; 0.05, not 0.05000000000000001."""
    return str(int(value)) if value == int(value) else f"{value:g}"


def env_dir(env: Mapping[str, str], name: str, default: Path) -> Path:
    """A directory the gateway creates when missing (a cache): see `check_dir`."""
    raw = env.get(name, "").strip()
    return check_dir(name, Path(raw)) if raw else default


def check_dir(name: str, path: Path, *, must_exist: bool = False) -> Path:
    """`path`, unless it cannot be the directory that `name` sets: an existing file, a path
    under a file (no directory can be created there), or, with `must_exist`, a missing one.
    Checked at startup, so the mistake stops the gateway rather than a worker or a request."""
    try:
        if path.exists():
            if not path.is_dir():
                raise SettingsError(f"{name} must be a directory, but {path} is a file")
            return path
        if must_exist:
            raise SettingsError(f"{name} must be an existing directory, but {path} does not exist")
        existing = next(parent for parent in path.parents if parent.exists())
        if not existing.is_dir():
            raise SettingsError(
                f"{name} must be a directory, but {existing} (in {path}) is a file: "
                "no directory can be created under it"
            )
    except OSError as exc:  # a parent we may not search, say
        raise SettingsError(f"{name}: {path} cannot be checked ({exc})") from None
    return path


def check_writable_dir(name: str, path: Path) -> Path:
    """`path` as a directory this process fills (a cache): created if missing and written to
    once, at startup, so that a path nobody can write stops the gateway naming `name` rather
    than failing each worker's first use of it. One that already holds entries passes as it
    is: a cache filled ahead (baked into an image, a read-only volume) is read, not written."""
    check_dir(name, path)
    if holds_entries(path):
        return path
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as exc:
        raise SettingsError(
            f"{name}: {path} cannot be created or written ({exc.strerror or exc}); "
            "point it at a writable directory"
        ) from None
    return path


def holds_entries(path: Path) -> bool:
    """`path` is a directory with something in it (a cache filled ahead, or by a first run)."""
    with contextlib.suppress(OSError):
        return path.is_dir() and any(path.iterdir())
    return False


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
