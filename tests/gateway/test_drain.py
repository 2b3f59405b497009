"""SIGTERM drain: its settings, the signal interception, and /readyz while draining."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Iterator
from types import FrameType

import aiohttp
import pytest

from backends.replica import Replica
from core.env import SettingsError
from gateway.app import create_app
from gateway.drain import (
    CLOSE_BOUND_S,
    CLOSE_STAGES_S,
    DRAIN,
    STRAGGLER_MARGIN_S,
    WRITEBACK_DRAIN_S,
    DrainSettings,
    DrainState,
    intercept_sigterm,
    stop_bound_s,
)
from gateway.settings import Settings
from obs.logs import CLOSE_TIMEOUT_S as LOG_CLOSE_S
from tests.support.asgi_server import serving
from tests.support.fake_backend import FakeBackend


def test_drain_settings_read_from_the_environment() -> None:
    """Defaults 0 s and 30 s; both are read, the grace rounded up to whole seconds."""
    assert DrainSettings.from_env({}) == DrainSettings(0.0, 30.0)
    read = DrainSettings.from_env({"GATEWAY_DRAIN_DELAY_S": "8", "GATEWAY_SHUTDOWN_GRACE_S": "1.5"})
    assert read == DrainSettings(8.0, 1.5) and read.grace_whole_s == 2
    with pytest.raises(SettingsError, match="GATEWAY_DRAIN_DELAY_S"):
        DrainSettings.from_env({"GATEWAY_DRAIN_DELAY_S": "-1"})


class Heard(list[int]):
    """The signals the stand-in server handler got; `first` is set on the first."""

    def __init__(self) -> None:
        super().__init__()
        self.first = asyncio.Event()


@pytest.mark.parametrize("name", ["GATEWAY_DRAIN_DELAY_S", "GATEWAY_SHUTDOWN_GRACE_S"])
def test_a_drain_longer_than_an_hour_is_refused(name: str) -> None:
    """1e300 s would overflow the drain timer (and 1e5 s is no drain): the range is 0 to 3600."""
    for raw in ("1e300", "3601"):
        with pytest.raises(SettingsError, match=f"{name} must be between 0 and 3600"):
            DrainSettings.from_env({name: raw})


@pytest.fixture
def server_handler() -> Iterator[Heard]:
    """Stands in for uvicorn's SIGTERM handler; yields the signals it got."""
    got = Heard()

    def handle(sig: int, frame: FrameType | None) -> None:
        got.append(sig)
        got.first.set()

    original = signal.signal(signal.SIGTERM, handle)
    try:
        yield got
    finally:
        signal.signal(signal.SIGTERM, original)


async def test_first_sigterm_drains_then_forwards(server_handler: Heard) -> None:
    """The first SIGTERM marks draining and reaches the server after the delay; a second
    one at once; the undo puts the server's handler back."""
    state = DrainState()
    undo = intercept_sigterm(0.0, state)
    signal.raise_signal(signal.SIGTERM)
    assert state.draining
    async with asyncio.timeout(10):  # forwarded through the loop, after the (zero) delay
        await server_handler.first.wait()
    assert server_handler == [signal.SIGTERM]
    signal.raise_signal(signal.SIGTERM)
    assert server_handler == [signal.SIGTERM, signal.SIGTERM]
    undo()
    signal.raise_signal(signal.SIGTERM)
    assert len(server_handler) == 3


async def test_a_long_delay_holds_the_signal_back(server_handler: Heard) -> None:
    """During the delay the server has not heard of the SIGTERM."""
    state = DrainState()
    undo = intercept_sigterm(3600.0, state)
    try:
        signal.raise_signal(signal.SIGTERM)
        for _ in range(10):
            await asyncio.sleep(0)
        assert state.draining and server_handler == []
    finally:
        undo()


async def test_readyz_is_unready_while_draining_but_requests_are_served() -> None:
    """Draining: /readyz is a 503 naming the shutdown; a completion still succeeds."""
    app = create_app(Settings(), [Replica("m", FakeBackend(url="fake://a"))])
    async with serving(app) as url, aiohttp.ClientSession() as session:
        DRAIN.draining = True
        try:
            async with session.get(f"{url}/readyz") as response:
                assert response.status == 503
                assert "shutting_down" in await response.text()
            body = {"model": "m", "prompt": "hi"}
            async with session.post(f"{url}/v1/completions", json=body) as response:
                assert response.status == 200
        finally:
            DRAIN.draining = False
        async with session.get(f"{url}/readyz") as response:
            assert response.status == 200


def test_the_stop_bound_sums_every_closing_stage() -> None:
    """After the grace a worker's closing stages are bounded one by one; the supervisor waits
    for all of them (and a little slack) before it kills a worker, and the whole stop adds
    the drain delay, the grace and the supervisor's own log lines."""
    stages = dict(CLOSE_STAGES_S)
    assert stages["stored responses' writes"] == WRITEBACK_DRAIN_S
    assert sum(stages.values()) == CLOSE_BOUND_S
    assert STRAGGLER_MARGIN_S > CLOSE_BOUND_S
    drain = DrainSettings(delay_s=10.0, grace_s=29.5)
    assert stop_bound_s(drain) == 10.0 + 30 + STRAGGLER_MARGIN_S + LOG_CLOSE_S
