"""The soak's pure parts: the fault schedule, answer labels, the tasks gauge parser and the
verdict on synthetic samples."""

from __future__ import annotations

from bench.scenarios.soak.faults import ROTATION, FaultWindow, schedule
from bench.scenarios.soak.fdkinds import kind_of
from bench.scenarios.soak.procfs import ProcessSample
from bench.scenarios.soak.samples import Sample
from bench.scenarios.soak.tasks import UNLABELLED, parse
from bench.scenarios.soak.traffic import label_of
from bench.scenarios.soak.verdict import judge, recovery_s


def _sample(t: float, rss_mib: float, fds: int, tasks: float | None = None) -> Sample:
    processes = [
        ProcessSample(1, "parent", 60 * 1024, 12, 2),
        ProcessSample(2, "worker", int(rss_mib * 1024), fds, 9),
    ]
    return Sample(
        t, 5.0, 100, 95, 50.0, 90.0, {"ok": 95}, {"miss": 95}, 3, "", processes,
        None if tasks is None else {2: tasks},
    )  # fmt: skip


def test_schedule_rotates_kinds_and_keeps_the_tail_clean() -> None:
    """Ten minutes: faults every 60 s for 15 s, the kinds in rotation, none after 540 s."""
    windows = schedule(600, 60, 15)
    assert [w.start_s for w in windows] == [60, 120, 180, 240, 300, 360, 420, 480]
    assert [w.kind for w in windows[:4]] == list(ROTATION)
    assert max(w.end_s for w in windows) <= 540


def test_labels() -> None:
    """ok, expected 4xx for bad requests, statuses otherwise, broken streams named."""
    assert label_of("stream", 200) == "ok"
    assert label_of("bad", 400) == "4xx expected"
    assert label_of("non-stream", 404) == "404"
    assert label_of("stream", 200, "error event: upstream_error") == "stream error"
    assert label_of("stream", 200, "stream ended without data: [DONE]") == "broken stream"
    assert label_of("bad", 200) == "200 to a bad request"


def test_tasks_gauge_parsed_per_pid() -> None:
    """Per-worker values by pid label; a single process's value without one."""
    text = (
        "# TYPE gateway_event_loop_tasks gauge\n"
        'gateway_event_loop_tasks{pid="101"} 17.0\n'
        'gateway_event_loop_tasks{pid="102"} 21.0\n'
        "gateway_event_loop_tasks_other 3\n"
    )
    assert parse(text) == {101: 17.0, 102: 21.0}
    assert parse("gateway_event_loop_tasks 5.0\n") == {UNLABELLED: 5.0}
    assert parse("gateway_requests_total 5\n") == {}


def test_flat_run_passes_and_growth_fails() -> None:
    """Flat RSS, fds and tasks pass; 10% RSS growth or a climbing fd count fails."""
    flat = [_sample(t, 200.0, 50, 20.0) for t in range(5, 305, 5)]
    verdict = judge(flat, 60, [])
    assert verdict.word == "PASS", verdict
    growing = [_sample(t, 200.0 * (1 + t / 3000), 50, 20.0) for t in range(5, 305, 5)]
    assert judge(growing, 60, []).word == "FAIL"
    leaking = [_sample(t, 200.0, 50 + t // 10, 20.0) for t in range(5, 305, 5)]
    failed = [c.name for c in judge(leaking, 60, []).checks if c.passed is False]
    assert failed == ["open fds worker 2 (less open client connections)"]


def test_open_client_connections_do_not_count_as_a_leak() -> None:
    """More open client connections (the client's pool) pass; connections the client closed
    and the gateway kept fail."""

    def with_clients(t: float, kind: str, count: int) -> Sample:
        s = _sample(t, 200.0, 50 + count, 20.0)
        s.processes[1].fd_kinds[kind] = count
        return s

    pooled = [with_clients(t, "clients", int(t // 10)) for t in range(5, 305, 5)]
    assert judge(pooled, 60, []).word == "PASS"
    kept = [with_clients(t, "clients closed by peer", int(t // 10)) for t in range(5, 305, 5)]
    assert judge(kept, 60, []).word == "FAIL"


def test_samples_in_faults_are_left_out_and_tasks_may_be_missing() -> None:
    """A spike inside a fault window moves nothing; no tasks gauge: that check is unmeasured."""
    samples = [_sample(t, 300.0 if 100 <= t <= 120 else 200.0, 50) for t in range(5, 305, 5)]
    faults = [FaultWindow("redis-blackhole", 100, 115)]
    verdict = judge(samples, 60, faults)
    assert verdict.word == "PASS"
    tasks = [c for c in verdict.checks if c.name.startswith("asyncio tasks")]
    assert [c.passed for c in tasks] == [None]
    assert recovery_s(schedule(600, 60, 15)) == 10.0
    assert recovery_s(schedule(24, 5, 1)) == 2.0


def test_too_short_is_inconclusive() -> None:
    """Too few steady samples: no checks, INCONCLUSIVE, not a pass."""
    verdict = judge([_sample(t, 200.0, 50) for t in (5, 10, 15)], 0, [])
    assert verdict.word == "INCONCLUSIVE" and not verdict.passed


def test_descriptor_kinds() -> None:
    """Sockets named by the peer's port (or clients on our own port, open or closed by the
    client); pipes, epoll, files."""
    sockets = {
        "11": (40000, 6379, "01"),
        "12": (8000, 50000, "01"),
        "13": (8000, 0, "0A"),
        "14": (8000, 50001, "08"),
    }
    peers = {6379: "redis"}
    assert kind_of("socket:[11]", sockets, peers, 8000) == "redis"
    assert kind_of("socket:[12]", sockets, peers, 8000) == "clients"
    assert kind_of("socket:[14]", sockets, peers, 8000) == "clients closed by peer"
    assert kind_of("socket:[13]", sockets, peers, 8000) == "listening"
    assert kind_of("socket:[99]", sockets, peers, 8000) == "unix/other socket"
    assert kind_of("pipe:[5]", sockets, peers, 8000) == "pipe"
    assert kind_of("anon_inode:[eventpoll]", sockets, peers, 8000) == "eventpoll"
    assert kind_of("/dev/null", sockets, peers, 8000) == "file"
