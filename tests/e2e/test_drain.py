"""SIGTERM to a real gateway process: unready at once, still serving during the drain delay,
then refusing; a stream outliving the shutdown grace ends with an error event and [DONE].
SIGHUP: the key file re-read in place, no worker restarted."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from pathlib import Path

import aiohttp
import pytest

from access.caller import key_digest
from access.key_set import key_set_entry, new_key
from bench.harness.probes import http_ok
from bench.harness.processes import ManagedProcess, ProcessGroup
from tests.e2e.stack import start_gateway, start_sim

WAIT_S = 60.0


async def _wait_exit(popen_wait: asyncio.Future[int]) -> int:
    async with asyncio.timeout(WAIT_S):
        return await popen_wait


async def test_sigterm_drains_then_stops(tmp_path: Path) -> None:
    """/readyz is 503 right after SIGTERM while requests are served; then the port refuses,
    a stream still running at the end of the grace gets an error event and [DONE], and an
    answer not yet ready a 503 `shutting_down`."""
    with ProcessGroup(tmp_path) as group:
        _, sim_port = start_sim(group, "--itl-ms", "50", "--output-tokens", "1000")
        gateway, port = start_gateway(
            group,
            f"sim=grpc://127.0.0.1:{sim_port}",
            {
                "GATEWAY_DRAIN_DELAY_S": "8",
                "GATEWAY_SHUTDOWN_GRACE_S": "1",
                "GATEWAY_TOKENIZER_CACHE_DIR": str(tmp_path / "tokenizers"),
            },
        )
        base = f"http://127.0.0.1:{port}"
        long = {"model": "sim", "prompt": "long", "max_tokens": 2000, "stream": True}
        async with aiohttp.ClientSession() as session:
            stream = await session.post(f"{base}/v1/completions", json=long)
            assert stream.status == 200
            assert (await stream.content.readline()).startswith(b"data: ")
            whole = {**long, "prompt": "long, not streamed", "stream": False}
            unstreamed = asyncio.ensure_future(session.post(f"{base}/v1/completions", json=whole))

            gateway.popen.send_signal(signal.SIGTERM)
            async with asyncio.timeout(WAIT_S):
                while True:  # the handler runs as soon as the process gets the signal
                    async with session.get(f"{base}/readyz") as ready:
                        if ready.status == 503:
                            assert "shutting_down" in await ready.text()
                            break
            served = {"model": "sim", "prompt": "during the drain", "max_tokens": 2}
            async with session.post(f"{base}/v1/completions", json=served) as response:
                assert response.status == 200, await response.text()

            code = await _wait_exit(asyncio.ensure_future(asyncio.to_thread(gateway.popen.wait)))
            async with await unstreamed as cut:  # an answer the grace cut: JSON, not a bare 500
                assert cut.status == 503, await cut.text()
                assert (await cut.json())["error"]["code"] == "shutting_down"
                assert "x-request-id" in cut.headers
            rest = (await stream.read()).decode()
            stream.release()
            assert '"shutting_down"' in rest, rest[-500:]
            assert rest.rstrip().endswith("data: [DONE]")
            assert code in (0, -signal.SIGTERM)
            with pytest.raises(aiohttp.ClientConnectionError):
                async with aiohttp.ClientSession() as fresh:
                    await fresh.get(f"{base}/readyz")


def _children(pid: int) -> list[int]:
    """The processes whose parent is `pid`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # The command name may hold spaces and parentheses: fields follow the last ')'.
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            found.append(int(entry.name))
    return found


def _workers(master: int) -> list[int]:
    """uvicorn's worker processes (multiprocessing spawn children) of `master`."""
    workers = []
    for child in _children(master):
        try:
            cmdline = Path(f"/proc/{child}/cmdline").read_bytes()
        except OSError:
            continue
        if b"spawn_main" in cmdline:
            workers.append(child)
    return sorted(workers)


async def _both_workers(master: int) -> list[int]:
    """The two workers of `master` once both are up (one answering makes the gateway ready:
    on a loaded box the other can still be starting)."""
    async with asyncio.timeout(WAIT_S):
        while True:
            workers = _workers(master)
            if len(workers) >= 2:
                return workers
            await asyncio.sleep(0.05)


def _two_workers_on_a_key_file(
    group: ProcessGroup, sim_port: int, keys: Path, ready_path: str | None
) -> tuple[ManagedProcess, int]:
    """A gateway of two workers reading `keys`, which only a signal makes them re-read."""
    return start_gateway(
        group,
        f"sim=grpc://127.0.0.1:{sim_port}",
        {
            "GATEWAY_WORKERS": "2",
            "GATEWAY_API_KEYS_FILE": str(keys),
            "GATEWAY_API_KEYS_RELOAD_S": "3600",  # only the signal can explain a reload
            "GATEWAY_TOKENIZER_CACHE_DIR": str(keys.parent / "tokenizers"),
        },
        ready_path=ready_path,
    )


async def _until_every_worker_admits(port: int, key: str) -> None:
    """Until `key` is admitted ten times in a row on fresh connections: both workers take
    connections, so ten in a row say both know it."""
    models = f"http://127.0.0.1:{port}/v1/models"
    async with asyncio.timeout(WAIT_S):
        answered = 0
        while answered < 10:
            async with (
                aiohttp.ClientSession() as fresh,
                fresh.get(models, headers={"authorization": f"Bearer {key}"}) as response,
            ):
                answered = answered + 1 if response.status == 200 else 0
            await asyncio.sleep(0.05)


def _alive(pids: list[int]) -> list[int]:
    return [pid for pid in pids if Path(f"/proc/{pid}").exists()]


def _socket_inode(server_port: int, client_port: int) -> int | None:
    """The inode of the server's end of the loopback connection from `client_port`."""
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                local, remote = fields[1], fields[2]
                if int(local.rsplit(":", 1)[1], 16) == server_port and (
                    int(remote.rsplit(":", 1)[1], 16) == client_port
                ):
                    return int(fields[9])
    return None


def _owner(pids: list[int], server_port: int, client_port: int) -> int | None:
    """Which of `pids` holds the accepted connection from `client_port`."""
    inode = _socket_inode(server_port, client_port)
    if inode is None:
        return None
    link = f"socket:[{inode}]"
    for pid in pids:
        with contextlib.suppress(OSError):
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                with contextlib.suppress(OSError):
                    if os.readlink(fd) == link:
                        return pid
    return None


async def _owner_of(response: aiohttp.ClientResponse, workers: list[int], server_port: int) -> int:
    assert response.connection is not None and response.connection.transport is not None
    client_port = response.connection.transport.get_extra_info("sockname")[1]
    owner = _owner(workers, server_port, client_port)
    assert owner is not None, "no worker holds the connection"
    return owner


async def _readyz(workers: list[int], port: int) -> tuple[int, int]:
    """(the worker that answered, the status) of GET /readyz on a fresh connection."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        client_port = writer.get_extra_info("sockname")[1]
        owner = None
        for _ in range(200):  # until a worker has accepted it
            owner = _owner(workers, port, client_port)
            if owner is not None:
                break
            await asyncio.sleep(0.01)
        assert owner is not None, "no worker accepted the connection"
        writer.write(b"GET /readyz HTTP/1.1\r\nhost: gateway\r\nconnection: close\r\n\r\n")
        status_line = await reader.readline()
        return owner, int(status_line.split()[1])
    finally:
        writer.close()


async def _readyz_on_each_worker(workers: list[int], port: int) -> dict[int, int]:
    """/readyz's status as each worker answers it (fresh connections until both did)."""
    statuses: dict[int, int] = {}
    for _ in range(200):
        owner, status = await _readyz(workers, port)
        statuses[owner] = status
        if len(statuses) == len(workers):
            break
    return statuses


async def test_two_workers_drain_together_and_exit(tmp_path: Path) -> None:
    """GATEWAY_WORKERS=2 and SIGTERM to the master only (as Kubernetes sends it): /readyz turns
    503 in both workers, streams running on both finish inside the grace, new connections are
    refused once the drain delay is over, the master exits 0 and no worker outlives it."""
    with ProcessGroup(tmp_path) as group:
        _, sim_port = start_sim(group, "--itl-ms", "50", "--output-tokens", "1000")
        gateway, port = start_gateway(
            group,
            f"sim=grpc://127.0.0.1:{sim_port}",
            {
                "GATEWAY_WORKERS": "2",
                "GATEWAY_DRAIN_DELAY_S": "3",
                "GATEWAY_SHUTDOWN_GRACE_S": "20",
                "GATEWAY_TOKENIZER_CACHE_DIR": str(tmp_path / "tokenizers"),
            },
        )
        base = f"http://127.0.0.1:{port}"
        workers = await _both_workers(gateway.pid)
        assert len(workers) == 2, workers
        # Streams of ~10 s (200 tokens at 50 ms): they outlive the drain delay, not the grace.
        body = {"model": "sim", "prompt": "drain", "max_tokens": 200, "stream": True}
        streams: list[aiohttp.ClientResponse] = []
        on: set[int] = set()
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
            assert set((await _readyz_on_each_worker(workers, port)).values()) == {200}
            for _ in range(40):  # until each worker serves at least one stream
                stream = await session.post(f"{base}/v1/completions", json=body)
                assert stream.status == 200, await stream.text()
                assert (await stream.content.readline()).startswith(b"data: ")
                streams.append(stream)
                on.add(await _owner_of(stream, workers, port))
                if on == set(workers):
                    break
            assert on == set(workers), "the streams all landed on one worker"
            readers = [asyncio.ensure_future(s.read()) for s in streams]

            started = time.monotonic()
            gateway.popen.send_signal(signal.SIGTERM)  # the master alone
            async with asyncio.timeout(WAIT_S):
                while True:
                    statuses = await _readyz_on_each_worker(workers, port)
                    if set(statuses.values()) == {503} and len(statuses) == 2:
                        break
            assert time.monotonic() - started < 3, "both workers must turn unready at once"
            async with asyncio.timeout(WAIT_S):
                while True:  # refused once the delay is over (not left hanging in a backlog)
                    try:
                        _, writer = await asyncio.wait_for(
                            asyncio.open_connection("127.0.0.1", port), 1.0
                        )
                    except ConnectionRefusedError:
                        break
                    writer.close()
                    await asyncio.sleep(0.1)
            refused_after = time.monotonic() - started
            assert 2.5 < refused_after < 8, refused_after
            assert not any(r.done() for r in readers), "the streams should still be running"

            code = await _wait_exit(asyncio.ensure_future(asyncio.to_thread(gateway.popen.wait)))
            for reader, stream in zip(readers, streams, strict=True):
                rest = (await reader).decode()
                stream.release()
                assert rest.rstrip().endswith("data: [DONE]"), rest[-300:]
                assert '"error"' not in rest, rest[-300:]
        assert code == 0
        assert _alive(workers) == []
        assert _children(gateway.pid) == []


async def test_a_second_sigterm_reaches_the_workers(tmp_path: Path) -> None:
    """With several workers a second SIGTERM to the master cuts the drain delay short, as it
    does with one: the master forwards it, and everything is gone well before the delay."""
    with ProcessGroup(tmp_path) as group:
        _, sim_port = start_sim(group)
        gateway, port = start_gateway(
            group,
            f"sim=grpc://127.0.0.1:{sim_port}",
            {
                "GATEWAY_WORKERS": "2",
                "GATEWAY_DRAIN_DELAY_S": "60",
                "GATEWAY_TOKENIZER_CACHE_DIR": str(tmp_path / "tokenizers"),
            },
        )
        workers = await _both_workers(gateway.pid)
        gateway.popen.send_signal(signal.SIGTERM)
        async with asyncio.timeout(WAIT_S):
            while True:
                statuses = await _readyz_on_each_worker(workers, port)
                if set(statuses.values()) == {503} and len(statuses) == 2:
                    break
        started = time.monotonic()
        gateway.popen.send_signal(signal.SIGTERM)
        code = await _wait_exit(asyncio.ensure_future(asyncio.to_thread(gateway.popen.wait)))
        assert code == 0 and time.monotonic() - started < 20
        assert _alive(workers) == []


async def test_sighup_to_the_master_has_each_worker_reread_the_keys(tmp_path: Path) -> None:
    """GATEWAY_WORKERS=2, SIGHUP to the master: the workers re-read the key file in place (a
    key added to it works at once, long before the next poll), and none is restarted."""
    old, added = new_key(), new_key()
    keys = tmp_path / "keys.json"
    keys.write_text(f"[{key_set_entry(key_digest(old), 'acme')}]")
    with ProcessGroup(tmp_path) as group:
        _, sim_port = start_sim(group)
        gateway, port = _two_workers_on_a_key_file(group, sim_port, keys, "/readyz")
        workers = await _both_workers(gateway.pid)
        assert len(workers) == 2, workers
        keys.write_text(
            f"[{key_set_entry(key_digest(old), 'acme')},{key_set_entry(key_digest(added), 'acme')}]"
        )
        gateway.popen.send_signal(signal.SIGHUP)
        await _until_every_worker_admits(port, added)
        async with (
            aiohttp.ClientSession() as session,
            session.get(
                f"http://127.0.0.1:{port}/v1/models", headers={"authorization": f"Bearer {old}"}
            ) as kept,
        ):
            assert kept.status == 200
        assert _workers(gateway.pid) == workers


async def test_sighup_while_the_workers_start_restarts_none(tmp_path: Path) -> None:
    """GATEWAY_WORKERS=2, SIGHUP to the master as soon as its workers exist, before they can
    have installed their handlers: no worker dies of it, and each re-reads the key file once
    it is up."""
    old, added = new_key(), new_key()
    keys = tmp_path / "keys.json"
    keys.write_text(f"[{key_set_entry(key_digest(old), 'acme')}]")
    with ProcessGroup(tmp_path) as group:
        _, sim_port = start_sim(group)
        # the signal must come while the workers start: no wait for readiness
        gateway, port = _two_workers_on_a_key_file(group, sim_port, keys, None)
        workers = await _both_workers(gateway.pid)
        keys.write_text(
            f"[{key_set_entry(key_digest(old), 'acme')},{key_set_entry(key_digest(added), 'acme')}]"
        )
        gateway.popen.send_signal(signal.SIGHUP)
        gateway.wait_ready(lambda: http_ok(port, "/readyz"), WAIT_S, "/readyz")
        await _until_every_worker_admits(port, added)
        assert _workers(gateway.pid) == workers


async def test_sighup_without_a_key_file_is_ignored(tmp_path: Path) -> None:
    """One worker, no key file: a stray SIGHUP neither stops nor restarts the gateway."""
    with ProcessGroup(tmp_path) as group:
        _, sim_port = start_sim(group)
        gateway, port = start_gateway(
            group,
            f"sim=grpc://127.0.0.1:{sim_port}",
            {"GATEWAY_TOKENIZER_CACHE_DIR": str(tmp_path / "tokenizers")},
        )
        gateway.popen.send_signal(signal.SIGHUP)
        async with aiohttp.ClientSession() as session:
            for _ in range(3):  # the signal is handled (or not) well within these requests
                async with session.get(f"http://127.0.0.1:{port}/v1/models") as response:
                    assert response.status == 200
        assert gateway.popen.poll() is None
