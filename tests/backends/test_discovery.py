"""DNS-named replica sets: joining, retiring and draining, with a resolver the test controls."""

from __future__ import annotations

import asyncio
import socket
from dataclasses import dataclass, field

import pytest

from backends.base import Backend
from backends.discovery import EMPTY_TO_RETIRE, Discovery, ReplicaSet, resolve_dns
from backends.factory import build_discovery, build_replicas
from backends.fleet import Fleet
from backends.replica_urls import split_dns_url
from backends.settings import BackendSettings
from budgets.deadline import Deadline
from core.backend_errors import NoHealthyBackend
from core.env import SettingsError
from core.errors import ModelNotFound
from tests.support.fake_backend import FakeBackend

SET = ReplicaSet("m", "grpc+dns://vllm-headless:50051")


@dataclass
class ClosingBackend(FakeBackend):
    """A fake backend that remembers being closed."""

    closed: bool = False

    async def aclose(self) -> None:
        self.closed = True


@dataclass
class FakeResolver:
    """Answers each name with the (address, port) pairs the test sets; `error` fails it."""

    answers: dict[str, list[tuple[str, int]]] = field(default_factory=dict)
    error: OSError | None = None
    asked: list[tuple[str, int]] = field(default_factory=list)

    async def __call__(self, host: str, port: int) -> list[tuple[str, int]]:
        self.asked.append((host, port))
        if self.error is not None:
            raise self.error
        return self.answers.get(host, [])


class Built:
    """The backends discovery built, by URL; `unhealthy` URLs fail their probes."""

    def __init__(self) -> None:
        self.by_url: dict[str, ClosingBackend] = {}
        self.keys: dict[str, str | None] = {}
        self.unhealthy: set[str] = set()

    def __call__(self, model: str, url: str, api_key: str | None) -> Backend:
        backend = ClosingBackend(url=url, healthy=url not in self.unhealthy)
        self.by_url[url] = backend
        self.keys[url] = api_key
        return backend


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _setup(
    *addresses: str, slow_start_s: float = 0.0
) -> tuple[Fleet, Discovery, FakeResolver, Built, Clock]:
    clock = Clock()
    fleet = Fleet(
        [],
        retry_attempts=1,
        health_interval_s=0.01,
        health_timeout_s=1,
        slow_start_s=slow_start_s,
        clock=clock,
    )
    resolver = FakeResolver({"vllm-headless": [(a, 50051) for a in addresses]})
    built = Built()
    discovery = Discovery(fleet, [SET], built, refresh_s=60, resolver=resolver)
    return fleet, discovery, resolver, built, clock


def test_dns_urls_parse_into_replica_sets() -> None:
    """grpc+dns://name:port and http+dns://name:port/v1 are replica sets; static ones are not."""
    raw = "a=grpc+dns://vllm-headless:50051,grpc://b:1;c=http+dns://svc:8000/v1"
    settings = BackendSettings.from_env({"GATEWAY_BACKENDS": raw, "GATEWAY_DNS_REFRESH_S": "2"})
    assert [r.dns for spec in settings.models for r in spec.replicas] == [True, False, True]
    assert settings.dns_refresh_s == 2.0
    assert [r.model for r in build_replicas(settings)] == ["a"]
    target = split_dns_url("http+dns://svc:8000/v1/")
    assert target.replica_url("10.0.0.7") == "http://10.0.0.7:8000/v1"
    assert target.replica_url("fd00::7", 9000) == "http://[fd00::7]:9000/v1"


@pytest.mark.parametrize("url", ["grpc+dns://vllm-headless", "grpc+dns://:50051", "ftp+dns://a:1"])
def test_a_dns_url_without_host_or_port_is_refused(url: str) -> None:
    """A replica set must name a host and a port, with a known scheme."""
    with pytest.raises(SettingsError, match="GATEWAY_BACKENDS"):
        BackendSettings.from_env({"GATEWAY_BACKENDS": f"m={url}"})


def test_static_configuration_has_no_discovery() -> None:
    """Without +dns URLs no discovery is built."""
    settings = BackendSettings.from_env({"GATEWAY_BACKENDS": "m=grpc://a:1"})
    fleet = Fleet([], retry_attempts=1, health_interval_s=60, health_timeout_s=1)
    assert build_discovery(settings, fleet) is None


async def test_each_resolved_address_joins_once_healthy() -> None:
    """Every address becomes a replica; it takes requests once its probe passes."""
    fleet, discovery, resolver, built, _ = _setup("10.0.0.1", "10.0.0.2")
    built.unhealthy.add("grpc://10.0.0.2:50051")
    await discovery.start()
    try:
        assert resolver.asked == [("vllm-headless", 50051)]
        assert discovery.urls(SET) == ["grpc://10.0.0.1:50051", "grpc://10.0.0.2:50051"]
        assert {fleet.pick("m").url for _ in range(4)} == {"grpc://10.0.0.1:50051"}
        assert all(b.started for b in built.by_url.values())
    finally:
        await discovery.aclose()
        await fleet.aclose()


async def test_a_sets_api_key_reaches_each_replica_not_its_url() -> None:
    """`http+dns://:KEY@name:port/v1`: every resolved replica gets KEY; no URL shows it."""
    settings = BackendSettings.from_env({"GATEWAY_BACKENDS": "m=http+dns://:sk-up@svc:8000/v1"})
    fleet = Fleet([], retry_attempts=1, health_interval_s=60, health_timeout_s=1)
    discovery = build_discovery(settings, fleet, FakeResolver({"svc": [("10.0.0.1", 8000)]}))
    assert discovery is not None
    built = Built()
    discovery._build = built
    await discovery.refresh()
    try:
        assert built.keys == {"http://10.0.0.1:8000/v1": "sk-up"}
    finally:
        await fleet.aclose()


async def test_an_unresolved_set_is_a_declared_model_that_is_not_ready() -> None:
    """No addresses yet: the model exists (503, not 404) and the gateway is not ready."""
    fleet, discovery, _, _, _ = _setup()
    await discovery.refresh()
    assert fleet.models == ["m"] and not fleet.ready()
    with pytest.raises(NoHealthyBackend):
        fleet.pick("m")
    with pytest.raises(ModelNotFound):
        fleet.pick("other")


async def test_a_new_address_joins_with_slow_start() -> None:
    """A replica found on a later refresh joins warming up: it starts its slow start."""
    fleet, discovery, resolver, _, clock = _setup("10.0.0.1", slow_start_s=30)
    await discovery.refresh()
    clock.now = 500.0
    resolver.answers["vllm-headless"].append(("10.0.0.2", 50051))
    await discovery.refresh()
    joined = [r for r in fleet.replicas("m") if r.url == "grpc://10.0.0.2:50051"]
    assert len(joined) == 1 and joined[0].healthy and joined[0].healthy_since == 500.0
    assert joined[0].warmth(515.0, 30) == pytest.approx(0.5)
    await fleet.aclose()


async def test_a_vanished_address_drains_then_closes() -> None:
    """A replica gone from DNS takes no new requests; it is closed once its requests end."""
    fleet, discovery, resolver, built, _ = _setup("10.0.0.1", "10.0.0.2")
    await discovery.refresh()
    leaving = next(r for r in fleet.replicas("m") if r.url == "grpc://10.0.0.2:50051")
    slot = await leaving.admission.acquire("interactive", Deadline.after(60))
    resolver.answers["vllm-headless"] = [("10.0.0.1", 50051)]
    await discovery.refresh()
    assert discovery.urls(SET) == ["grpc://10.0.0.1:50051"]
    assert leaving not in fleet.replicas("m")
    assert {fleet.pick("m").url for _ in range(4)} == {"grpc://10.0.0.1:50051"}
    drain = fleet.members.draining.copy().pop()
    for _ in range(5):
        await asyncio.sleep(0)
    assert not drain.done() and not built.by_url["grpc://10.0.0.2:50051"].closed
    slot.release()
    await drain
    assert built.by_url["grpc://10.0.0.2:50051"].closed
    assert not built.by_url["grpc://10.0.0.1:50051"].closed
    await fleet.aclose()


async def test_a_failed_lookup_keeps_the_replicas() -> None:
    """A DNS error is not an outage: the set keeps what it had."""
    fleet, discovery, resolver, _, _ = _setup("10.0.0.1")
    await discovery.refresh()
    resolver.error = OSError("temporary failure in name resolution")
    await discovery.refresh()
    assert discovery.urls(SET) == ["grpc://10.0.0.1:50051"] and fleet.ready()
    await fleet.aclose()


async def test_ports_from_the_resolver_are_used() -> None:
    """A resolver may hand out ports (tests: stand-ins on several ports of one host)."""
    fleet, discovery, resolver, _, _ = _setup()
    resolver.answers["vllm-headless"] = [("127.0.0.1", 7001), ("127.0.0.1", 7002)]
    await discovery.refresh()
    assert discovery.urls(SET) == ["grpc://127.0.0.1:7001", "grpc://127.0.0.1:7002"]
    await fleet.aclose()


async def test_the_default_resolver_answers_from_the_system() -> None:
    """The default resolver resolves via the loop, de-duplicated."""
    assert await resolve_dns("127.0.0.1", 50051) == [("127.0.0.1", 50051)]


@dataclass
class FailingStart(ClosingBackend):
    """A fake backend whose start fails."""

    async def start(self) -> None:
        raise OSError("cannot connect")


async def test_a_replica_that_cannot_start_is_tried_again() -> None:
    """A newcomer whose backend fails to start stays out, and the next refresh retries it."""
    fleet, discovery, *_ = _setup("10.0.0.1")
    builders = iter([FailingStart, ClosingBackend])
    discovery._build = lambda model, url, api_key: next(builders)(url=url)
    await discovery.refresh()
    assert discovery.urls(SET) == [] and fleet.replicas("m") == []
    await discovery.refresh()
    assert discovery.urls(SET) == ["grpc://10.0.0.1:50051"] and fleet.ready()
    await fleet.aclose()


async def test_a_resolver_failure_never_retires_the_replicas() -> None:
    """Timeouts and SERVFAIL (EAI_AGAIN, EAI_FAIL) keep the set however often they repeat."""
    fleet, discovery, resolver, _, _ = _setup("10.0.0.1")
    await discovery.refresh()
    for error in (socket.EAI_AGAIN, socket.EAI_FAIL):
        resolver.error = socket.gaierror(error, "temporary failure in name resolution")
        for _ in range(10):
            await discovery.refresh()
    resolver.error = TimeoutError("resolver timed out")
    await discovery.refresh()
    assert discovery.urls(SET) == ["grpc://10.0.0.1:50051"] and fleet.ready()
    stats = discovery.stats[SET]
    assert (stats.resolved, stats.empty, stats.failed, stats.stale_for) == (1, 0, 21, 21)
    resolver.error = None
    await discovery.refresh()
    assert (stats.resolved, stats.stale_for, stats.addresses) == (2, 0, 1)
    await fleet.aclose()


@pytest.mark.parametrize(
    "empty",
    [None, socket.gaierror(socket.EAI_NONAME, "Name or service not known")],
    ids=["no-addresses", "nxdomain"],
)
async def test_an_empty_answer_retires_the_set_once_it_repeats(
    empty: socket.gaierror | None,
) -> None:
    """No address (or NXDOMAIN) keeps the last known replicas until it has come on
    EMPTY_TO_RETIRE refreshes in a row; then they are retired and drained."""
    fleet, discovery, resolver, built, _ = _setup("10.0.0.1", "10.0.0.2")
    await discovery.refresh()
    resolver.answers["vllm-headless"] = []
    resolver.error = empty
    for _ in range(EMPTY_TO_RETIRE - 1):
        await discovery.refresh()
        assert len(discovery.urls(SET)) == 2 and fleet.ready()
    stats = discovery.stats[SET]
    assert (stats.empty, stats.failed, stats.stale_for) == (EMPTY_TO_RETIRE - 1, 0, 2)
    await discovery.refresh()
    assert discovery.urls(SET) == [] and fleet.replicas("m") == [] and not fleet.ready()
    assert (stats.empty, stats.stale_for, stats.addresses) == (EMPTY_TO_RETIRE, 0, 0)
    await asyncio.gather(*fleet.members.draining)
    assert all(b.closed for b in built.by_url.values())
    await discovery.refresh()  # still empty, nothing left to retire: quiet
    assert stats.stale_for == 0
    await fleet.aclose()


async def test_an_answer_with_addresses_resets_the_empty_count() -> None:
    """Empty answers must come in a row: one with addresses in between starts over."""
    fleet, discovery, resolver, _, _ = _setup("10.0.0.1")
    await discovery.refresh()
    full = list(resolver.answers["vllm-headless"])
    for _ in range(3):
        resolver.answers["vllm-headless"] = []
        for _ in range(EMPTY_TO_RETIRE - 1):
            await discovery.refresh()
        resolver.answers["vllm-headless"] = full
        await discovery.refresh()
    assert discovery.urls(SET) == ["grpc://10.0.0.1:50051"]
    # A failure in between neither counts as empty nor resets the count.
    resolver.answers["vllm-headless"] = []
    await discovery.refresh()
    resolver.error = socket.gaierror(socket.EAI_AGAIN, "again")
    await discovery.refresh()
    resolver.error = None
    for _ in range(EMPTY_TO_RETIRE - 1):
        await discovery.refresh()
    assert discovery.urls(SET) == []
    await fleet.aclose()


def test_retiring_needs_at_least_one_empty_answer() -> None:
    """empty_to_retire below 1 is a programming error."""
    fleet = Fleet([], retry_attempts=1, health_interval_s=60, health_timeout_s=1)
    with pytest.raises(ValueError, match="empty_to_retire"):
        Discovery(fleet, [SET], Built(), refresh_s=60, empty_to_retire=0)
