"""Cache settings and Redis deployments: the exact cache takes a single Redis or a Redis
Cluster; the semantic cache on a cluster stops the gateway, naming the variables."""

from __future__ import annotations

import pytest
import redis.asyncio as aioredis

from cache.factory_redis import semantic_redis_client
from cache.settings import CacheSettings
from core.env import SettingsError

CLUSTER = "redis+cluster://node-0.redis:6379"


@pytest.mark.parametrize("url", ["redis://redis:6379/0", CLUSTER, "rediss+cluster://u:p@cfg:6379"])
def test_the_exact_cache_takes_a_single_redis_or_a_cluster(url: str) -> None:
    """With the semantic cache off, any Redis URL the gateway can open is accepted."""
    settings = CacheSettings.from_env({"GATEWAY_REDIS_URL": url})
    assert settings.redis_url == url
    assert settings.redis_cluster is ("+cluster" in url)


@pytest.mark.parametrize("mode", ["on", "shadow"])
def test_the_semantic_cache_on_a_cluster_stops_the_gateway(mode: str) -> None:
    """Vector search needs a single Redis: the error names both variables and the way out."""
    env = {"GATEWAY_REDIS_URL": CLUSTER, "GATEWAY_SEMANTIC_CACHE": mode}
    with pytest.raises(SettingsError) as info:
        CacheSettings.from_env(env)
    message = str(info.value)
    assert f"GATEWAY_SEMANTIC_CACHE={mode}" in message and "GATEWAY_REDIS_URL" in message
    assert "Redis Cluster" in message and "GATEWAY_SEMANTIC_CACHE=off" in message


@pytest.mark.parametrize("url", ["", "redis://redis-stack:6379/0"])
def test_the_semantic_cache_takes_a_single_redis_or_none(url: str) -> None:
    """In process (no URL) or on a single Redis Stack, the semantic cache starts."""
    env = {"GATEWAY_REDIS_URL": url, "GATEWAY_SEMANTIC_CACHE": "on"}
    assert CacheSettings.from_env(env).semantic == "on"


def test_a_url_that_is_no_redis_url_names_the_variable() -> None:
    """A scheme the gateway cannot open stops it at startup, naming GATEWAY_REDIS_URL."""
    with pytest.raises(SettingsError, match="GATEWAY_REDIS_URL"):
        CacheSettings.from_env({"GATEWAY_REDIS_URL": "redis-stack:6379"})


async def test_the_semantic_index_client_is_never_a_cluster() -> None:
    """Settings built in code (not from the environment) are refused by the factory too."""
    with pytest.raises(SettingsError, match="GATEWAY_SEMANTIC_CACHE=on"):
        semantic_redis_client(CacheSettings(redis_url=CLUSTER, semantic="on"))
    client = semantic_redis_client(CacheSettings(redis_url="redis://127.0.0.1:1/0", semantic="on"))
    assert isinstance(client, aioredis.Redis)
    await client.aclose()


def test_the_semantic_index_name_is_a_setting() -> None:
    """GATEWAY_SEMANTIC_INDEX names the index (default gw:sem); a name unfit for a key prefix
    stops the gateway, naming the variable."""
    assert CacheSettings.from_env({}).semantic_index == "gw:sem"
    named = CacheSettings.from_env({"GATEWAY_SEMANTIC_INDEX": "gw:sem-v2"})
    assert named.semantic_index == "gw:sem-v2"
    with pytest.raises(SettingsError, match="GATEWAY_SEMANTIC_INDEX"):
        CacheSettings.from_env({"GATEWAY_SEMANTIC_INDEX": "gw sem*"})
