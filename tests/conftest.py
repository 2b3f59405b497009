"""Suite-wide setup that must happen before any test module imports gRPC, and the private
Redis servers the tests start."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from bench.harness.redis_stack import redis_stack
from tests.support.redis_cluster import RedisClusterProcess, redis_cluster

# The suite starts servers with subprocess (fork, then exec) while gRPC channels and servers
# run in this process. gRPC's fork handlers restart its poller in the child between fork and
# exec, where close_fds has just closed the poller's epoll descriptor: the child then aborts
# before exec ("epoll_wait error: Bad file descriptor"). Nothing here forks without exec.
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "0")


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    """A private Redis Stack for the module that asks for it (or REDIS_URL)."""
    with redis_stack() as server:
        yield server.url


@pytest.fixture(scope="session")
def redis_cluster_server() -> Iterator[RedisClusterProcess]:
    """A private three-master Redis Cluster on loopback for the whole run (or REDIS_CLUSTER_URL),
    started by the first test that asks for it."""
    with redis_cluster() as cluster:
        yield cluster
