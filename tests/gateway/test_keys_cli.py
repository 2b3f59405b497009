"""`gateway keys new`: a key printed once, and an entry that admits exactly that key."""

from __future__ import annotations

import pytest

from access.caller import key_digest
from access.key_set import parse_key_set
from gateway.cli import main


def test_new_key_prints_the_key_and_its_entry(capsys: pytest.CaptureFixture[str]) -> None:
    """The printed entry holds the key's hash, never the key, with the limits asked for."""
    assert main(["keys", "new", "--tenant", "acme", "--models", "a,b", "--max-tokens", "64"]) == 0
    lines = capsys.readouterr().out.splitlines()
    key = lines[0].rsplit(" ", 1)[-1]
    entry = lines[1].split(": ", 1)[1]
    assert key.startswith("sk-gw-") and key not in entry
    caller = parse_key_set(f"[{entry}]", "printed")[key_digest(key)]
    assert caller.tenant == "acme" and caller.models == frozenset({"a", "b"})
    assert caller.limits.max_tokens == 64


def test_invalid_tenant_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    """A tenant the key set would refuse is refused here too, with no key printed."""
    assert main(["keys", "new", "--tenant", "no spaces"]) == 2
    captured = capsys.readouterr()
    assert "tenant" in captured.err and "sk-gw-" not in captured.out


@pytest.mark.parametrize(
    ("flag", "value", "named"),
    [
        ("--max-tokens", "0", "max_tokens"),
        ("--requests-per-minute", "0", "requests_per_minute"),
        ("--tokens-per-minute", "0", "tokens_per_minute"),
        ("--tokens-per-day", "0", "tokens_per_day"),
        ("--models", ",,", "--models"),
        ("--models", "", "--models"),
    ],
)
def test_zero_limits_and_empty_model_lists_are_refused(
    capsys: pytest.CaptureFixture[str], flag: str, value: str, named: str
) -> None:
    """A zero limit or an empty model list is refused, never printed as an unlimited key."""
    assert main(["keys", "new", "--tenant", "acme", flag, value]) == 2
    captured = capsys.readouterr()
    assert named in captured.err and "sk-gw-" not in captured.out
