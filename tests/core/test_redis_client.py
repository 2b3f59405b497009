"""Redis URLs: a single Redis or a Redis Cluster by scheme, and typos named at startup."""

from __future__ import annotations

import pytest
import redis.asyncio as aioredis
from redis.asyncio.cluster import RedisCluster

from core.env import SettingsError
from core.redis_client import check_redis_url, is_cluster_url, redis_client


@pytest.mark.parametrize(
    ("url", "cluster"),
    [
        ("redis://localhost:6379/0", False),
        ("rediss://user:secret@redis.example:6380", False),
        ("unix:///run/redis.sock", False),
        ("redis+cluster://10.0.0.1:6379", True),
        ("rediss+cluster://user:secret@cfg.example:6379", True),
        ("REDIS+CLUSTER://node:7000", True),
    ],
)
def test_the_scheme_says_cluster_or_single(url: str, cluster: bool) -> None:
    """`redis+cluster://` and `rediss+cluster://` name a cluster; the usual schemes do not."""
    assert check_redis_url("GATEWAY_REDIS_URL", url) == url
    assert is_cluster_url(url) is cluster


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("localhost:6379", "scheme"),
        ("http://redis:6379", "scheme"),
        ("redis+sentinel://redis:26379", "scheme"),
        ("redis+cluster://", "host"),
        ("redis+cluster://node:6379/2", "database 0"),
        ("redis://localhost:99999", "port"),
        ("rediss://localhost:abc", "port"),
        ("redis://localhost:0", "port"),
        ("redis+cluster://node:70000", "port"),
        ("redis://[::1", "not a valid URL"),
        ("redis+cluster://[::1", "not a valid URL"),
        ("rediss://user:pw@[::1:6379/0", "not a valid URL"),
        ("unix://", "socket's path"),
        ("unix:///", "socket's path"),
    ],
)
def test_a_bad_url_names_the_variable(url: str, reason: str) -> None:
    """A URL the gateway cannot open stops it, naming the variable and what is wrong."""
    with pytest.raises(SettingsError, match=f"GATEWAY_REDIS_URL.*{reason}"):
        check_redis_url("GATEWAY_REDIS_URL", url)


def test_a_bad_port_never_shows_the_password() -> None:
    """The refusal of a port out of range names the variable and the range, not the URL's secret."""
    with pytest.raises(SettingsError, match="1 to 65535") as info:
        check_redis_url("GATEWAY_REDIS_URL", "redis://:s3cret@localhost:99999/0")
    assert "s3cret" not in str(info.value)


async def test_a_cluster_url_opens_a_cluster_client_without_connecting() -> None:
    """A cluster URL gives a RedisCluster seeded with that node (TLS and credentials kept),
    a plain URL a Redis; neither connects before its first command."""
    cluster = redis_client("rediss+cluster://user:secret@127.0.0.1:7000/0", 0.05)
    single = redis_client("redis://127.0.0.1:7000/0", 0.05)
    try:
        assert isinstance(cluster, RedisCluster) and isinstance(single, aioredis.Redis)
        node = cluster.nodes_manager.startup_nodes["127.0.0.1:7000"]
        assert (node.host, node.port) == ("127.0.0.1", 7000)
        assert node.connection_kwargs["username"] == "user"
        assert node.connection_kwargs["password"] == "secret"
        assert node.connection_class.__name__ == "SSLConnection"
    finally:
        await cluster.aclose()
        await single.aclose()
