"""A replica killed during a run is ejected and traffic continues on the others."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import aiohttp

from tests.e2e.stack import running_stack

REQUESTS = 60
WORKERS = 4
KILL_AFTER = 15


async def test_killed_replica_is_ejected_and_traffic_continues(tmp_path: Path) -> None:
    """Every request succeeds although one of two replicas dies mid-run."""
    with running_stack(tmp_path, sims=2, mock=False, sim_args=("--itl-ms", "2")) as stack:
        victim = stack.sims[0]
        completed = 0
        failures: list[str] = []
        queue: asyncio.Queue[int] = asyncio.Queue()
        for i in range(REQUESTS):
            queue.put_nowait(i)

        async def worker(session: aiohttp.ClientSession) -> None:
            nonlocal completed
            while not queue.empty():
                i = queue.get_nowait()
                payload = {"model": "sim", "prompt": f"request {i}", "max_tokens": 8}
                async with session.post(f"{stack.api_url}/completions", json=payload) as response:
                    if response.status != 200:
                        failures.append(f"{response.status}: {await response.text()}")
                completed += 1
                if completed == KILL_AFTER:
                    victim.popen.send_signal(signal.SIGKILL)

        async with aiohttp.ClientSession() as session:
            await asyncio.gather(*(worker(session) for _ in range(WORKERS)))
        assert failures == []
        assert not victim.alive()
        async with (
            aiohttp.ClientSession() as session,
            session.get(f"{stack.base_url}/readyz") as response,
        ):
            assert response.status == 200
