"""A retired replica's series disappear (one process and several workers); one ejected from
routing is out of rotation and counted; DNS lookups are counted; a metrics file another
worker is creating never breaks a worker or /metrics."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from backends.fleet import Fleet
from backends.replica import Replica
from budgets.deadline import Deadline
from core.backend_errors import BackendError
from gateway.metrics_sampler import sample
from obs.metrics import GatewayMetrics
from obs.multiproc import ENV_VAR
from obs.replica_metrics import DnsSample
from tests.obs.test_metrics import ROOT, Samples, parse, render_in_subprocess, value
from tests.support.fake_backend import FakeBackend

INFLIGHT = "gateway_replica_inflight_requests"
HEALTHY = "gateway_replica_healthy"
A = {"model": "sim", "replica": "grpc://a:1"}
B = {"model": "sim", "replica": "grpc://b:1"}


@pytest.fixture(autouse=True)
def _single_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_VAR, raising=False)


def _series(s: Samples, replica: dict[str, str]) -> list[str]:
    """The names of the series labelled with `replica`."""
    labels = frozenset(replica.items())
    return sorted(name for name, sample_labels in s if sample_labels == labels)


def test_a_replica_no_longer_sampled_loses_its_series() -> None:
    """retain_replicas removes every series of the replicas left out, and only those."""
    metrics = GatewayMetrics(models=["sim"])
    metrics.replica_state("sim", "grpc://a:1", inflight=2, queued=1, healthy=True)
    metrics.replica_state("sim", "grpc://b:1", inflight=5, queued=3, healthy=True)
    assert metrics.retain_replicas([("sim", "grpc://a:1")]) == [("sim", "grpc://b:1")]
    s = parse(metrics.render()[0])
    assert _series(s, B) == []
    assert value(s, INFLIGHT, **A) == 2
    # It comes back (same address, a new pod): its series start again.
    metrics.replica_state("sim", "grpc://b:1", inflight=1, queued=0, healthy=True)
    assert value(parse(metrics.render()[0]), INFLIGHT, **B) == 1
    assert metrics.retain_replicas([("sim", "grpc://a:1"), ("sim", "grpc://b:1")]) == []


def test_the_prefix_index_of_each_replica_is_reported() -> None:
    """A replica prefix routing can use reports ready and its blocks; one it cannot, 0 and 0."""
    metrics = GatewayMetrics(models=["sim"])
    metrics.replica_state("sim", "grpc://a:1", inflight=0, queued=0, healthy=True, prefix_blocks=7)
    metrics.replica_state("sim", "grpc://b:1", inflight=0, queued=0, healthy=True)
    s = parse(metrics.render()[0])
    assert value(s, "gateway_replica_prefix_ready", **A) == 1
    assert value(s, "gateway_replica_prefix_blocks", **A) == 7
    assert value(s, "gateway_replica_prefix_ready", **B) == 0
    assert value(s, "gateway_replica_prefix_blocks", **B) == 0


async def test_the_sampler_keeps_a_draining_replica_until_it_closes() -> None:
    """A retired replica is reported (out of rotation) while it finishes its requests;
    once closed its series are gone."""
    fleet = Fleet(
        [Replica("sim", FakeBackend(url=url)) for url in ("grpc://a:1", "grpc://b:1")],
        retry_attempts=1,
        health_interval_s=0.01,
        health_timeout_s=1,
    )
    await fleet.start()
    metrics = GatewayMetrics(models=["sim"])
    leaving = fleet.replicas("sim")[1]
    slot = await leaving.admission.acquire("interactive", Deadline.after(60))
    drained = fleet.retire(leaving)
    sample(metrics, fleet, _NoCache(), _NoLimiter())  # type: ignore[arg-type]
    s = parse(metrics.render()[0])
    assert (value(s, INFLIGHT, **B), value(s, HEALTHY, **B)) == (1, 0)
    assert fleet.retiring() == [leaving]
    slot.release()
    await drained
    assert fleet.retiring() == []
    sample(metrics, fleet, _NoCache(), _NoLimiter())  # type: ignore[arg-type]
    s = parse(metrics.render()[0])
    assert _series(s, B) == [] and value(s, HEALTHY, **A) == 1
    await fleet.aclose()


async def test_a_replica_ejected_as_an_outlier_is_out_of_rotation_and_counted() -> None:
    """A replica whose probe passes but which was ejected for failing its calls reports 0 in
    rotation, and the ejection is counted by model and reason."""
    fleet = Fleet(
        [Replica("sim", FakeBackend(url=url)) for url in ("grpc://a:1", "grpc://b:1")],
        retry_attempts=1,
        health_interval_s=0.01,
        health_timeout_s=1,
    )
    await fleet.start()
    metrics = GatewayMetrics(models=["sim"])
    failing = fleet.replicas("sim")[1]
    for _ in range(5):
        fleet.outliers.failed(failing, BackendError("broken"))
    assert failing.healthy
    sample(metrics, fleet, _NoCache(), _NoLimiter())  # type: ignore[arg-type]
    s = parse(metrics.render()[0])
    assert (value(s, HEALTHY, **A), value(s, HEALTHY, **B)) == (1, 0)
    ejections = "gateway_replica_ejections_total"
    assert value(s, ejections, model="sim", reason="failures") == 1
    sample(metrics, fleet, _NoCache(), _NoLimiter())  # type: ignore[arg-type]
    assert value(parse(metrics.render()[0]), ejections, model="sim", reason="failures") == 1
    await fleet.aclose()


class _Writeback:
    depth = dropped = failed = 0


class _NoCache:
    """The cache layer's face the sampler reads: no breakers, an idle write-back queue."""

    writeback = _Writeback()
    semantic = None

    def breakers(self) -> list[object]:
        return []


class _NoLimiter:
    shared = None
    refused: dict[str, int] = {}  # noqa: RUF012
    local_decisions = 0


def test_dns_lookups_are_counted() -> None:
    """Lookups by result from cumulative counts, and the current run of stale lookups."""
    metrics = GatewayMetrics()
    url = "grpc+dns://vllm:50051"
    metrics.dns([DnsSample(url, resolved=3, empty=0, failed=1, stale_for=1)])
    metrics.dns([DnsSample(url, resolved=3, empty=2, failed=4, stale_for=5)])
    s = parse(metrics.render()[0])
    counted = {
        r: value(s, "gateway_dns_lookups_total", set=url, result=r)
        for r in ("resolved", "empty", "failed")
    }
    assert counted == {"resolved": 3, "empty": 2, "failed": 4}
    assert value(s, "gateway_dns_stale_lookups", set=url) == 5


WORKER = """
import sys
from obs.metrics import GatewayMetrics

metrics = GatewayMetrics(models=["sim"])
replicas = {"a": ("sim", "grpc://a:1"), "b": ("sim", "grpc://b:1")}
for line in sys.stdin:
    command, *names = line.split()
    if command == "set":
        for name in names:
            metrics.replica_state(*replicas[name], inflight=3, queued=1, healthy=True)
    elif command == "keep":
        metrics.retain_replicas([replicas[name] for name in names])
    metrics.flush()
    print("done", flush=True)
"""


class Worker:
    """A process recording replica gauges in multiprocess mode, one command a line."""

    def __init__(self, env: dict[str, str]) -> None:
        self.popen = subprocess.Popen(
            [sys.executable, "-c", WORKER],
            env=env,
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def __call__(self, line: str) -> None:
        assert self.popen.stdin is not None and self.popen.stdout is not None
        self.popen.stdin.write(line + "\n")
        self.popen.stdin.flush()
        assert self.popen.stdout.readline().strip() == "done"

    def stop(self) -> None:
        self.popen.communicate("", timeout=60)


@pytest.fixture
def multiproc_env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, ENV_VAR: str(tmp_path), "PYTHONPATH": str(ROOT)}


def test_several_workers_forget_a_replica_each_in_turn(multiproc_env: dict[str, str]) -> None:
    """With several workers the series sums the workers still reporting it and disappears
    once every worker has forgotten it; a replica that returns reports again."""
    workers = [Worker(multiproc_env), Worker(multiproc_env)]
    try:
        for worker in workers:
            worker("set a b")
        s = render_in_subprocess(multiproc_env)
        assert value(s, INFLIGHT, **B) == 6 and value(s, HEALTHY, **B) == 1
        workers[0]("keep a")
        s = render_in_subprocess(multiproc_env)
        assert value(s, INFLIGHT, **B) == 3 and value(s, HEALTHY, **B) == 1
        workers[1]("keep a")
        s = render_in_subprocess(multiproc_env)
        assert _series(s, B) == [] and value(s, INFLIGHT, **A) == 6
        workers[1]("set b")
        assert value(render_in_subprocess(multiproc_env), INFLIGHT, **B) == 3
    finally:
        for worker in workers:
            worker.stop()


def test_a_file_being_created_breaks_nothing(multiproc_env: dict[str, str]) -> None:
    """A worker's file exists empty for a moment before it is sized: starting a worker and
    rendering then must neither fail nor drop the other files (this made the multiprocess
    test flaky: a worker died in its GatewayMetrics)."""
    worker = Worker(multiproc_env)
    try:
        worker("set a")
        Path(multiproc_env[ENV_VAR], "gauge_livesum_999999.db").touch()
        Path(multiproc_env[ENV_VAR], "counter_999998.db").touch()
        assert value(render_in_subprocess(multiproc_env), INFLIGHT, **A) == 3
    finally:
        worker.stop()
