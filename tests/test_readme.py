"""The README's configuration table documents every variable the product reads."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from core.env import SettingsError
from gateway.drain import DrainSettings
from gateway.settings import Settings
from gateway.variables import KNOWN, REMOVED

ROOT = Path(__file__).resolve().parents[1]
PRODUCT = ("core", "budgets", "cache", "backends", "obs", "access", "gateway")
VARIABLE = re.compile(r"\"(GATEWAY_[A-Z0-9_]*[A-Z0-9])\"")  # not prefixes


def test_every_gateway_variable_is_in_the_configuration_table() -> None:
    """A `GATEWAY_*` name in the product's code has its row in the README's table (but for
    the removed ones, which the gateway refuses naming them as removed)."""
    read = {
        name
        for package in PRODUCT
        for path in (ROOT / package).rglob("*.py")
        for name in VARIABLE.findall(path.read_text())
    }
    readme = ROOT.joinpath("README.md").read_text()
    rows = set(re.findall(r"^\| `(GATEWAY_[A-Z0-9_]+)`", readme, re.MULTILINE))
    assert read, "no variables found: the scan is broken"
    assert sorted(read - rows - REMOVED.keys()) == []


def test_the_known_variables_are_the_configuration_table() -> None:
    """The names the gateway accepts at startup are exactly the table's rows, and every name
    in the code is one of them."""
    readme = ROOT.joinpath("README.md").read_text()
    rows = set(re.findall(r"^\| `(GATEWAY_[A-Z0-9_]+)`", readme, re.MULTILINE))
    read = {
        name
        for package in PRODUCT
        for path in (ROOT / package).rglob("*.py")
        for name in VARIABLE.findall(path.read_text())
    }
    assert sorted(KNOWN ^ rows) == []
    assert sorted(read - KNOWN - REMOVED.keys()) == []


def _enforced_range(name: str) -> tuple[str, str] | None:
    """The range the code states when `name` is set to an absurdly large number, if any."""
    env = {"GATEWAY_BACKENDS": "embedded", name: str(10**17)}
    try:
        Settings.from_env(env)
        DrainSettings.from_env(env)
    except SettingsError as exc:
        found = re.match(rf"{name} must be between (\S+) and (\S+), got", str(exc))
        return None if found is None else (found[1], found[2])
    return None


@pytest.mark.parametrize("name", sorted(KNOWN))
def test_the_table_states_each_numbers_range_as_enforced(name: str) -> None:
    """A number's row ends its meaning with the range the gateway enforces, and a row with a
    range is a number's: the table and the readers' bounds cannot drift apart."""
    readme = ROOT.joinpath("README.md").read_text()
    [row] = re.findall(rf"^\| `{name}` \|.*$", readme, re.MULTILINE)
    stated = re.search(r"; range (\S+) to (\S+)(?: \([^)]*\))? \|$", row)
    assert (stated.groups() if stated else None) == _enforced_range(name)
