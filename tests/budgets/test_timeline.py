"""Stage durations and the Server-Timing header, on an injectable clock."""

from __future__ import annotations

from budgets.timeline import Stage, Timeline
from core.stages import StageName


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_started_defaults_to_the_clock() -> None:
    """Without `started`, the timeline starts at the clock's current reading."""
    clock = FakeClock()
    assert Timeline(clock).started == 100.0
    assert Timeline(clock, started=42.0).started == 42.0


def test_record_returns_duration_and_appends_in_order() -> None:
    """record() returns now - since and keeps stages in the order they ended."""
    clock = FakeClock()
    timeline = Timeline(clock)
    clock.now = 100.5
    assert timeline.record(StageName.PARSE, 100.0) == 0.5
    clock.now = 100.75
    assert timeline.record(StageName.EXACT_CACHE, 100.5) == 0.25
    clock.now = 101.0
    assert timeline.record(StageName.PARSE, 100.0) == 1.0
    assert timeline.stages == [
        Stage("parse", 100.0, 0.5),
        Stage("exact_cache", 100.5, 0.25),
        Stage("parse", 100.0, 1.0),
    ]


def test_record_notes_the_replica_and_the_error_of_each_attempt() -> None:
    """A stage names the replica chosen when it ended, and the error it failed with: a
    request retried on another replica keeps both attempts apart."""
    clock = FakeClock()
    timeline = Timeline(clock)
    timeline.record(StageName.PARSE, 100.0)
    timeline.replica = "grpc://a:1"
    timeline.record(StageName.BACKEND, 100.0, "backend_error")
    timeline.replica = "grpc://b:1"
    timeline.record(StageName.BACKEND, 100.0)
    assert [(s.replica, s.error) for s in timeline.stages] == [
        (None, None),
        ("grpc://a:1", "backend_error"),
        ("grpc://b:1", None),
    ]


def test_elapsed_counts_from_started() -> None:
    """elapsed() is the clock minus `started`."""
    clock = FakeClock()
    timeline = Timeline(clock, started=99.0)
    clock.now = 101.5
    assert timeline.elapsed() == 2.5


def test_server_timing_formats_milliseconds_with_two_decimals() -> None:
    """Each stage renders as `name;dur=<ms>` with two decimals, joined by ', '."""
    clock = FakeClock()
    timeline = Timeline(clock)
    timeline.stages.extend(
        [Stage("parse", 0, 0.0015), Stage("exact_cache", 0, 0.25), Stage("semantic", 0, 0.0012345)]
    )
    assert timeline.server_timing() == ("parse;dur=1.50, exact_cache;dur=250.00, semantic;dur=1.23")


def test_server_timing_total_appends_elapsed_since_started() -> None:
    """total=True appends `total;dur=` measured from `started`, not from the first stage."""
    clock = FakeClock()
    timeline = Timeline(clock, started=99.0)
    clock.now = 99.5
    timeline.record(StageName.PARSE, 99.25)
    clock.now = 100.0
    assert timeline.server_timing(total=True) == "parse;dur=250.00, total;dur=1000.00"
    assert timeline.server_timing() == "parse;dur=250.00"


def test_empty_timeline() -> None:
    """No stages renders as an empty string, or just the total when asked."""
    clock = FakeClock()
    timeline = Timeline(clock)
    assert timeline.stages == []
    assert timeline.server_timing() == ""
    clock.now = 100.125
    assert timeline.server_timing(total=True) == "total;dur=125.00"
