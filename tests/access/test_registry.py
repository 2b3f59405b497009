"""The live key set: 401s, the access-off tenant, reloads of the key file (on change, on
SIGHUP), and a broken file that keeps the last good set."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import signal
import threading
from pathlib import Path

import pytest

from access.caller import key_digest, unverified_caller
from access.key_set import key_set_entry
from access.registry import KeyRegistry
from access.settings import AccessSettings
from core.errors import InvalidApiKey

ALICE, BOB = "sk-gw-alice-key", "sk-gw-bob-key"


def _write(path: Path, *entries: str) -> None:
    path.write_text("[" + ",".join(entries) + "]")


def _entry(key: str, tenant: str) -> str:
    return key_set_entry(key_digest(key), tenant)


async def _until(condition: object, timeout_s: float = 10.0) -> None:
    async with asyncio.timeout(timeout_s):
        while not condition():  # type: ignore[operator]  # noqa: ASYNC110
            await asyncio.sleep(0.02)


@pytest.fixture
def key_file(tmp_path: Path) -> Path:
    path = tmp_path / "keys.json"
    _write(path, _entry(ALICE, "acme"))
    return path


def test_known_key_is_its_caller(key_file: Path) -> None:
    """A listed key authenticates as its tenant, with the Bearer scheme in any case."""
    registry = KeyRegistry(AccessSettings(keys_file=key_file))
    assert registry.caller(f"Bearer {ALICE}").tenant == "acme"
    assert registry.caller(f"bearer {ALICE}").key_id == key_digest(ALICE)[:12]


@pytest.mark.parametrize(
    "header",
    [None, "", "Bearer ", f"Basic {ALICE}", f"Bearer {BOB}", ALICE, f"Token {ALICE}"],
)
def test_missing_or_unknown_key_is_401(key_file: Path, header: str | None) -> None:
    """No key, another scheme, a bare key without the Bearer scheme or an unknown key: 401
    invalid_api_key, the key masked."""
    registry = KeyRegistry(AccessSettings(keys_file=key_file))
    with pytest.raises(InvalidApiKey) as info:
        registry.caller(header)
    assert info.value.status == 401 and info.value.code == "invalid_api_key"
    assert BOB not in info.value.message and ALICE not in info.value.message


@pytest.mark.parametrize("header", [None, f"Bearer {ALICE}"])
def test_an_empty_inline_key_set_admits_nobody(header: str | None) -> None:
    """`GATEWAY_API_KEYS='[]'`: access control is on and every caller gets 401."""
    registry = KeyRegistry(AccessSettings.from_env({"GATEWAY_API_KEYS": "[]"}))
    assert registry.enabled
    with pytest.raises(InvalidApiKey):
        registry.caller(header)


def test_access_off_keeps_a_tenant_per_credential() -> None:
    """Without keys every caller is let in; distinct credentials get distinct tenants."""
    registry = KeyRegistry(AccessSettings())
    assert not registry.enabled
    assert registry.caller(None).tenant == "anon"
    assert registry.caller(f"Bearer {ALICE}") == unverified_caller(f"Bearer {ALICE}")
    assert registry.caller(f"Bearer {ALICE}").tenant != registry.caller(f"Bearer {BOB}").tenant


async def test_rewritten_file_is_followed(key_file: Path) -> None:
    """A change to the file is picked up by the watcher, with no restart."""
    registry = KeyRegistry(AccessSettings(keys_file=key_file, reload_interval_s=0.1))
    await registry.start()
    try:
        _write(key_file, _entry(ALICE, "acme"), _entry(BOB, "globex"))
        await _until(lambda: registry.key_count == 2)
        assert registry.caller(f"Bearer {BOB}").tenant == "globex"
    finally:
        await registry.aclose()


async def test_broken_file_keeps_the_last_good_set(key_file: Path) -> None:
    """A file that no longer parses is refused; the keys it replaced keep working."""
    registry = KeyRegistry(AccessSettings(keys_file=key_file))
    _write(key_file, '{"sha256": "nope", "tenant": "x"}')
    assert await registry.reload() is False
    assert registry.caller(f"Bearer {ALICE}").tenant == "acme" and registry.reload_failures == 1


async def test_sighup_reloads_at_once(key_file: Path) -> None:
    """SIGHUP re-reads the key file without waiting for the next poll."""
    registry = KeyRegistry(AccessSettings(keys_file=key_file, reload_interval_s=3600))
    await registry.start()
    try:
        _write(key_file, _entry(BOB, "globex"))
        os.kill(os.getpid(), signal.SIGHUP)
        await _until(lambda: registry.reloads == 2)
        assert registry.caller(f"Bearer {BOB}").tenant == "globex"
        with pytest.raises(InvalidApiKey):
            registry.caller(f"Bearer {ALICE}")
    finally:
        await registry.aclose()


async def test_a_sighup_sent_before_the_handler_waits_for_it(key_file: Path) -> None:
    """With SIGHUP blocked (as a worker starts), one sent before `start` reloads once the
    handler is in place, and after `aclose` SIGHUP is ignored, not deadly."""
    registry = KeyRegistry(AccessSettings(keys_file=key_file, reload_interval_s=3600))
    before = signal.getsignal(signal.SIGHUP)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGHUP})
    _write(key_file, _entry(BOB, "globex"))
    # To this thread: other threads of the test process may not block it.
    signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGHUP)
    await registry.start()
    try:
        await _until(lambda: registry.reloads == 2)
        assert registry.caller(f"Bearer {BOB}").tenant == "globex"
    finally:
        await registry.aclose()
        assert signal.getsignal(signal.SIGHUP) == signal.SIG_IGN
        signal.signal(signal.SIGHUP, before)


async def test_a_reload_repeating_an_inline_key_keeps_the_last_good_set(
    key_file: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A key file rewritten to repeat a GATEWAY_API_KEYS key is refused on SIGHUP, logged
    naming both variables and the key's id; the keys it would replace keep working."""
    inline = {"GATEWAY_API_KEYS": f"[{_entry(BOB, 'globex')}]"}
    settings = AccessSettings.from_env({**inline, "GATEWAY_API_KEYS_FILE": str(key_file)})
    registry = KeyRegistry(dataclasses.replace(settings, reload_interval_s=3600))
    await registry.start()
    try:
        _write(key_file, _entry(ALICE, "acme"), _entry(BOB, "initech"))
        os.kill(os.getpid(), signal.SIGHUP)
        await _until(lambda: registry.reload_failures == 1)
        assert registry.caller(f"Bearer {BOB}").tenant == "globex"
        assert registry.caller(f"Bearer {ALICE}").tenant == "acme"
        assert key_digest(BOB)[:12] in caplog.text and "of GATEWAY_API_KEYS (" in caplog.text
    finally:
        await registry.aclose()


def test_inline_keys_and_file_merge(key_file: Path) -> None:
    """Keys from GATEWAY_API_KEYS and the file are used together."""
    settings = AccessSettings.from_env(
        {"GATEWAY_API_KEYS": f"[{_entry(BOB, 'globex')}]", "GATEWAY_API_KEYS_FILE": str(key_file)}
    )
    registry = KeyRegistry(settings)
    assert {registry.caller(f"Bearer {k}").tenant for k in (ALICE, BOB)} == {"acme", "globex"}
