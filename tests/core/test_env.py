"""The environment readers: each refusal names its variable."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

from core.env import (
    DAY_S,
    SettingsError,
    check_dir,
    check_writable_dir,
    env_bool,
    env_dir,
    env_float,
    env_int,
    env_map,
    env_ms,
    env_str,
)


@pytest.mark.parametrize("raw", ["inf", "-inf", "Infinity", "nan", "1e400"])
def test_non_finite_numbers_are_refused(raw: str) -> None:
    """inf (or a number that overflows to it) is no time or size: an error naming the variable."""
    with pytest.raises(SettingsError, match="GATEWAY_X must be a finite number"):
        env_float({"GATEWAY_X": raw}, "GATEWAY_X", 1.0, low=0.0, high=10.0)
    with pytest.raises(SettingsError, match="GATEWAY_X"):
        env_ms({"GATEWAY_X": raw}, "GATEWAY_X", 1.0, high_s=DAY_S)


def test_every_number_reader_demands_an_upper_bound() -> None:
    """No reader has a default maximum: each setting states its own, so 1e300 never passes."""
    env = {"GATEWAY_X": "1e300"}
    with pytest.raises(TypeError):
        env_float(env, "GATEWAY_X", 1.0, low=0.0)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        env_int(env, "GATEWAY_X", 1, low=0)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        env_ms(env, "GATEWAY_X", 1.0)  # type: ignore[call-arg]


@pytest.mark.parametrize(
    ("reader", "message"),
    [
        (lambda env: env_ms(env, "GATEWAY_X", 1.0, high_s=DAY_S), "between 1 and 86400000"),
        (
            lambda env: env_float(env, "GATEWAY_X", 1.0, low=0.05, high=3600),
            "between 0.05 and 3600",
        ),
        (lambda env: env_int(env, "GATEWAY_X", 1, low=1, high=64), "between 1 and 64"),
    ],
)
def test_a_number_out_of_range_states_the_range(
    reader: Callable[[dict[str, str]], float], message: str
) -> None:
    """The refusal names the variable and its whole range, in plain numbers."""
    with pytest.raises(SettingsError, match=f"GATEWAY_X must be {message}, got"):
        reader({"GATEWAY_X": str(10**17)})


def test_booleans_name_every_spelling_accepted() -> None:
    """The refusal lists on/off too, as the configuration table spells some switches."""
    with pytest.raises(SettingsError, match="on/off"):
        env_bool({"GATEWAY_X": "maybe"}, "GATEWAY_X", True)


@pytest.mark.parametrize("raw", ["", "   "])
def test_blank_strings_mean_the_default(raw: str) -> None:
    """An empty or blank string setting is its default."""
    assert env_str({"GATEWAY_X": raw}, "GATEWAY_X", "dflt") == "dflt"


def test_a_map_naming_one_key_twice_is_refused() -> None:
    """Which of two values was meant is unknowable; the last one would silently win."""
    with pytest.raises(SettingsError, match="GATEWAY_X names 'a' twice"):
        env_map({"GATEWAY_X": "a=1;b=2;a=3"}, "GATEWAY_X")


def test_a_directory_cannot_be_a_file_or_lie_under_one(tmp_path: Path) -> None:
    """A directory variable at a file, or under one, is refused naming it; a missing one is
    fine unless it must exist; blank is the default."""
    (tmp_path / "file").touch()
    for path in (tmp_path / "file", tmp_path / "file" / "sub" / "dir"):
        with pytest.raises(SettingsError, match=r"GATEWAY_X must be a directory.*is a file"):
            env_dir({"GATEWAY_X": str(path)}, "GATEWAY_X", tmp_path)
    assert env_dir({"GATEWAY_X": str(tmp_path / "new")}, "GATEWAY_X", tmp_path) == tmp_path / "new"
    assert env_dir({"GATEWAY_X": " "}, "GATEWAY_X", tmp_path) == tmp_path
    with pytest.raises(SettingsError, match="GATEWAY_X must be an existing directory"):
        check_dir("GATEWAY_X", tmp_path / "new", must_exist=True)


def test_a_writable_directory_is_created_and_checked(tmp_path: Path) -> None:
    """A cache directory that is missing is created; nothing is left in it by the check."""
    path = tmp_path / "a" / "b"
    assert check_writable_dir("GATEWAY_X_DIR", path) == path
    assert path.is_dir() and list(path.iterdir()) == []


def test_a_filled_cache_is_not_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A cache directory that already holds entries (baked into an image, a read-only
    volume) passes without a write; an empty one that cannot be written is refused."""

    def unwritable(*args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Read-only file system")

    monkeypatch.setattr(tempfile, "TemporaryFile", unwritable)
    (tmp_path / "filled" / "0a1b").mkdir(parents=True)
    assert check_writable_dir("GATEWAY_X_DIR", tmp_path / "filled") == tmp_path / "filled"
    with pytest.raises(SettingsError, match="cannot be created or written"):
        check_writable_dir("GATEWAY_X_DIR", tmp_path / "empty")


@pytest.mark.parametrize("where", ["/proc/1/x", "/proc/1/x/y"])
def test_a_directory_nobody_can_create_names_its_variable(where: str) -> None:
    """A path under which no directory can be made (/proc) is refused, naming the variable."""
    with pytest.raises(SettingsError, match=f"GATEWAY_X_DIR: {where} cannot be created"):
        check_writable_dir("GATEWAY_X_DIR", Path(where))


@pytest.mark.parametrize("raw", ["1_0", "8_000", "1_000.5"])
def test_digit_grouping_is_refused(raw: str) -> None:
    """Python reads `1_0` as 10; a variable set so is a typo, refused naming it."""
    env = {"GATEWAY_X": raw}
    with pytest.raises(SettingsError, match="GATEWAY_X must be"):
        env_float(env, "GATEWAY_X", 1.0, low=0.0, high=100000.0)
    if "." not in raw:
        with pytest.raises(SettingsError, match="GATEWAY_X must be an integer"):
            env_int(env, "GATEWAY_X", 1, low=0, high=100000)
