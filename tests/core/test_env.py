"""The environment readers: each refusal names its variable."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.env import (
    SettingsError,
    check_dir,
    env_bool,
    env_dir,
    env_float,
    env_map,
    env_ms,
    env_str,
)


@pytest.mark.parametrize("raw", ["inf", "-inf", "Infinity", "nan", "1e400"])
def test_non_finite_numbers_are_refused(raw: str) -> None:
    """inf (or a number that overflows to it) is no time or size: an error naming the variable."""
    with pytest.raises(SettingsError, match="GATEWAY_X must be a finite number"):
        env_float({"GATEWAY_X": raw}, "GATEWAY_X", 1.0, low=0.0)
    with pytest.raises(SettingsError, match="GATEWAY_X"):
        env_ms({"GATEWAY_X": raw}, "GATEWAY_X", 1.0)


def test_an_open_range_reads_at_least() -> None:
    """Without an upper bound the message says "at least", never "between 0 and inf"."""
    with pytest.raises(SettingsError) as info:
        env_float({"GATEWAY_X": "-1"}, "GATEWAY_X", 1.0, low=0.0)
    assert "at least 0" in str(info.value) and "inf" not in str(info.value)


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
