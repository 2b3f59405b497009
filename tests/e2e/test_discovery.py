"""Replicas found in DNS: a real gateway (in this process, with a resolver the test controls)
in front of real stand-ins; one joins, one leaves while streaming, no restart."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import aiohttp
import grpc

from bench.harness.processes import ProcessGroup
from gateway.app import create_app
from gateway.settings import Settings
from standin.vllm.control import ControlClient
from tests.e2e.stack import start_sim
from tests.obs.test_metrics import Samples, parse
from tests.support.asgi_server import serving

WAIT_S = 60.0


class SwitchableResolver:
    """Hands out the loopback ports the test sets; `handed` is set once the current answer
    has been handed out (the discovery applies it before it next yields)."""

    def __init__(self, ports: list[int]) -> None:
        self.ports = ports
        self.handed = asyncio.Event()
        self.error: OSError | None = None
        self.lookups = 0

    def answer(self, ports: list[int]) -> None:
        self.ports = ports
        self.handed = asyncio.Event()

    async def __call__(self, host: str, port: int) -> list[tuple[str, int]]:
        self.handed.set()
        self.lookups += 1
        if self.error is not None:
            raise self.error
        return [("127.0.0.1", p) for p in self.ports]


async def _calls(control: ControlClient) -> int:
    return int((await control.stats())["generate_calls"])


async def _complete(session: aiohttp.ClientSession, base: str, i: int) -> None:
    payload = {"model": "sim", "prompt": f"discovery {i}", "max_tokens": 4}
    async with session.post(f"{base}/v1/completions", json=payload) as response:
        assert response.status == 200, await response.text()


async def test_a_joining_replica_takes_traffic_and_a_leaving_one_finishes_its_stream(
    tmp_path: Path,
) -> None:
    """A new address joins once healthy; a vanished one gets no new requests while the stream
    it serves runs to [DONE]."""
    with ProcessGroup(tmp_path) as group:
        (_, first), (_, second) = (start_sim(group, "--itl-ms", "20") for _ in range(2))
        resolver = SwitchableResolver([first])
        env = {
            "GATEWAY_BACKENDS": "sim=grpc+dns://vllm-headless:50051",
            "GATEWAY_DNS_REFRESH_S": "0.2",
            "GATEWAY_HEALTH_INTERVAL_S": "0.2",
            "GATEWAY_SLOW_START_S": "0",
            "GATEWAY_TOKENIZER_CACHE_DIR": str(tmp_path / "tokenizers"),
        }
        app = create_app(Settings.from_env(env), resolver=resolver)
        channels = [grpc.aio.insecure_channel(f"127.0.0.1:{p}") for p in (first, second)]
        old, new = (ControlClient(c) for c in channels)
        try:
            async with serving(app) as base, aiohttp.ClientSession() as session:
                await _complete(session, base, 0)
                assert await _calls(old) == 1 and await _calls(new) == 0

                resolver.answer([first, second])
                async with asyncio.timeout(WAIT_S):
                    i = 1
                    while await _calls(new) == 0:  # rotates onto the newcomer once it joined
                        await _complete(session, base, i)
                        i += 1

                body = {"model": "sim", "prompt": "long", "max_tokens": 40, "stream": True}
                # Until the stream lands on the replica about to leave (routing may prefer the
                # newcomer for half a minute: bounded, so a change that never does fails here).
                async with asyncio.timeout(120):
                    while True:
                        before = await _calls(old)
                        stream = await session.post(f"{base}/v1/completions", json=body)
                        if await _calls(old) > before:
                            break
                        await stream.read()
                        stream.release()
                first_line = await stream.content.readline()
                assert first_line.startswith(b"data: ")
                resolver.answer([second])
                async with asyncio.timeout(WAIT_S):
                    await resolver.handed.wait()
                served_old = await _calls(old)
                for j in range(4):
                    await _complete(session, base, 100 + j)
                assert await _calls(old) == served_old
                rest = (await stream.read()).decode()
                stream.release()
                assert rest.rstrip().endswith("data: [DONE]") and '"error"' not in rest
        finally:
            for channel in channels:
                await channel.close(grace=None)


async def _metrics(session: aiohttp.ClientSession, base: str) -> Samples:
    async with session.get(f"{base}/metrics") as response:
        return parse(await response.read())


def _replica_series(samples: Samples, url: str) -> list[str]:
    return sorted(name for name, labels in samples if ("replica", url) in labels)


async def test_resolver_failures_keep_the_set_and_an_empty_one_retires_it(
    tmp_path: Path,
) -> None:
    """Failed lookups never empty the set; answers without addresses retire it only once
    they repeat, and then the retired replica's series leave /metrics."""
    with ProcessGroup(tmp_path) as group:
        _, port = start_sim(group)
        url = f"grpc://127.0.0.1:{port}"
        resolver = SwitchableResolver([port])
        env = {
            "GATEWAY_BACKENDS": "sim=grpc+dns://vllm-headless:50051",
            "GATEWAY_DNS_REFRESH_S": "0.1",
            "GATEWAY_HEALTH_INTERVAL_S": "0.2",
            "GATEWAY_TOKENIZER_CACHE_DIR": str(tmp_path / "tokenizers"),
        }
        app = create_app(Settings.from_env(env), resolver=resolver)
        async with serving(app) as base, aiohttp.ClientSession() as session:
            await _complete(session, base, 0)
            async with asyncio.timeout(WAIT_S):
                while True:  # the sampler runs once a second
                    if _replica_series(await _metrics(session, base), url):
                        break
                    await asyncio.sleep(0.2)

            resolver.error = socket.gaierror(socket.EAI_AGAIN, "Temporary failure")
            failed_from = resolver.lookups
            async with asyncio.timeout(WAIT_S):
                while True:
                    if resolver.lookups >= failed_from + 10:
                        break
                    await asyncio.sleep(0.05)
            await _complete(session, base, 1)
            async with session.get(f"{base}/readyz") as ready:
                assert ready.status == 200

            resolver.error = None
            resolver.answer([])
            async with asyncio.timeout(WAIT_S):
                while True:
                    async with session.get(f"{base}/readyz") as ready:
                        if ready.status == 503:
                            break
                    await asyncio.sleep(0.05)
                while True:
                    samples = await _metrics(session, base)
                    if not _replica_series(samples, url):
                        break
                    await asyncio.sleep(0.2)
            lookups = {
                dict(labels)["result"]: count
                for (name, labels), count in samples.items()
                if name == "gateway_dns_lookups_total"
            }
            assert lookups["failed"] >= 10 and lookups["empty"] >= 3 and lookups["resolved"] >= 1
