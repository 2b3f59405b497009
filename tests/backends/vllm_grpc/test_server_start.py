"""A server's start, told from the uptime it reports."""

from __future__ import annotations

from backends.vllm_grpc.server_start import ServerStart


def test_the_first_reading_is_no_restart() -> None:
    """A server seen for the first time has not restarted."""
    assert not ServerStart().restarted(100.0, now=1000.0)


def test_readings_of_one_start_are_no_restart() -> None:
    """Later readings of the same start (its uptime grown with the clock, give or take the
    time the answer took) are no restart."""
    start = ServerStart()
    start.restarted(100.0, now=1000.0)
    assert not start.restarted(109.5, now=1010.0)
    assert not start.restarted(110.0, now=1010.0 + 0.4, answer_s=0.5)


def test_a_later_start_is_a_restart_once() -> None:
    """An uptime shorter than the clock allows is a restart; the next reading of that new
    start is not."""
    start = ServerStart()
    start.restarted(100.0, now=1000.0)
    assert start.restarted(5.0, now=1010.0)
    assert not start.restarted(6.0, now=1011.0)


def test_no_uptime_reported_is_never_a_restart() -> None:
    """A server that reports no uptime (0) is never said to have restarted."""
    start = ServerStart()
    start.restarted(100.0, now=1000.0)
    assert not start.restarted(0.0, now=1010.0)


def test_after_forgetting_the_next_reading_is_a_first_one() -> None:
    """Once the server is forgotten (lost), its next start is recorded, not reported."""
    start = ServerStart()
    start.restarted(100.0, now=1000.0)
    start.forget()
    assert not start.restarted(1.0, now=1010.0)
    assert start.restarted(1.0, now=1020.0)
