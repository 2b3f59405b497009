"""A model's replicas that report different served names, tokenizers or contexts."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import pytest

from backends.fleet_members import Members
from backends.pool_agreement import PoolAgreement
from backends.replica import Replica
from backends.served import Served
from tests.support.fake_backend import FakeBackend


@dataclass
class Reporting(FakeBackend):
    """A fake replica reporting what it serves (None: not known yet)."""

    report: Served | None = None

    def served(self) -> Served | None:
        return self.report


def _replica(url: str, report: Served | None) -> Replica:
    return Replica("llama", Reporting(url=url, report=report), healthy=True)


def test_replicas_serving_the_same_agree_silently(caplog: pytest.LogCaptureFixture) -> None:
    """Equal reports (and a replica that reports nothing yet) are no disagreement."""
    agreement = PoolAgreement()
    same = Served("sim", "t1", 4096)
    agreement.check("llama", [_replica("a", same), _replica("b", same), _replica("c", None)])
    assert agreement.disagreements("llama") == frozenset()
    assert not caplog.records


def test_different_served_names_are_warned_once_naming_both(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Two served model names in one pool: one warning naming both replicas and names, not
    one per probe; the disagreement lasts until they agree again."""
    agreement = PoolAgreement()
    pool = [_replica("grpc://a", Served("sim", "t1", 4096))]
    pool.append(_replica("grpc://b", Served("other", "t1", 4096)))
    with caplog.at_level(logging.INFO, "gateway.fleet"):
        for _ in range(3):
            agreement.check("llama", pool)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert all(word in warnings[0] for word in ("grpc://a", "'sim'", "grpc://b", "'other'"))
    assert agreement.disagreements("llama") == {"name"}
    pool[1] = _replica("grpc://b", Served("sim", "t1", 4096))
    agreement.check("llama", pool)
    assert agreement.disagreements("llama") == frozenset()


def test_a_different_tokenizer_is_warned_and_a_different_context_noted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A tokenizer or template apart is a warning; a context apart, routed around, an info."""
    agreement = PoolAgreement()
    pool = [_replica("a", Served("sim", "t1", 4096)), _replica("b", Served("sim", "t2", 1024))]
    with caplog.at_level(logging.INFO, "gateway.fleet"):
        agreement.check("llama", pool)
    assert agreement.disagreements("llama") == {"tokenizer", "context"}
    assert sorted(r.levelno for r in caplog.records) == [logging.INFO, logging.WARNING]


async def test_each_probe_compares_the_pool() -> None:
    """The fleet's members compare a model's replicas after each probe."""
    a = _replica("a", Served("sim", "t1", 4096))
    b = _replica("b", Served("other", "t1", 4096))
    members = Members([a, b], health_interval_s=60, health_timeout_s=1)
    await members.probe(b)
    assert members.agreement.disagreements("llama") == {"name"}
