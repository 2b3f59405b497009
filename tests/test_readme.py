"""The README's configuration table documents every variable the product reads."""

from __future__ import annotations

import re
from pathlib import Path

from gateway.variables import KNOWN

ROOT = Path(__file__).resolve().parents[1]
PRODUCT = ("core", "budgets", "cache", "backends", "obs", "access", "gateway")
VARIABLE = re.compile(r"\"(GATEWAY_[A-Z0-9_]*[A-Z0-9])\"")  # not prefixes


def test_every_gateway_variable_is_in_the_configuration_table() -> None:
    """A `GATEWAY_*` name in the product's code has its row in the README's table."""
    read = {
        name
        for package in PRODUCT
        for path in (ROOT / package).rglob("*.py")
        for name in VARIABLE.findall(path.read_text())
    }
    readme = ROOT.joinpath("README.md").read_text()
    rows = set(re.findall(r"^\| `(GATEWAY_[A-Z0-9_]+)`", readme, re.MULTILINE))
    assert read, "no variables found: the scan is broken"
    assert sorted(read - rows) == []


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
    assert sorted(read - KNOWN) == []
