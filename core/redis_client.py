"""The one way this gateway opens a Redis client (the caches and the shared rate limits).

`GATEWAY_REDIS_URL` names a single Redis (`redis://`, `rediss://`, `unix://`) or, with the
`redis+cluster://` / `rediss+cluster://` schemes, any node of a Redis Cluster (a seed: the
client discovers the others and follows MOVED/ASK redirections itself).
"""

from __future__ import annotations

from typing import TypeAlias
from urllib.parse import urlsplit

import redis.asyncio as aioredis
from redis.asyncio.cluster import RedisCluster

from core.env import SettingsError

RedisClient: TypeAlias = aioredis.Redis | RedisCluster

CLUSTER_SCHEMES = {"redis+cluster": "redis", "rediss+cluster": "rediss"}
SINGLE_SCHEMES = ("redis", "rediss", "unix")


def is_cluster_url(url: str) -> bool:
    """The URL names a Redis Cluster (`redis+cluster://` or `rediss+cluster://`)."""
    return urlsplit(url.strip()).scheme.lower() in CLUSTER_SCHEMES


def check_redis_url(name: str, url: str) -> str:
    """`url` (stripped) if it is empty or a Redis URL this gateway can open; otherwise a
    `SettingsError` naming the variable `name`, so a typo stops the gateway at startup."""
    url = url.strip()
    if not url:
        return url
    try:
        parts = urlsplit(url)
    except ValueError as exc:  # an unclosed "[" of an IPv6 address
        raise SettingsError(f"{name} is not a valid URL ({exc})") from None
    scheme = parts.scheme.lower()
    if scheme not in (*SINGLE_SCHEMES, *CLUSTER_SCHEMES):
        raise SettingsError(
            f"{name} must be a redis://, rediss://, unix://, redis+cluster:// or "
            f"rediss+cluster:// URL, got scheme {parts.scheme or '(none)'!r}"
        )
    if scheme == "unix" and not parts.path.strip("/"):
        raise SettingsError(
            f"{name}: a unix:// URL needs the socket's path (unix:///run/redis.sock)"
        )
    if scheme != "unix":
        try:
            port = parts.port
        except ValueError:  # out of range or not a number: the client would fail in a worker
            port = 0
        if port == 0:
            raise SettingsError(f"{name}: the port must be a number from 1 to 65535")
    if scheme in CLUSTER_SCHEMES:
        if not parts.hostname:
            raise SettingsError(f"{name}: a {scheme}:// URL needs a host (any cluster node)")
        if parts.path.strip("/") not in ("", "0"):
            raise SettingsError(
                f"{name}: a Redis Cluster has database 0 only, got {parts.path.strip('/')!r}"
            )
    return url


def redis_client(url: str, timeout_s: float) -> RedisClient:
    """A pooled client whose socket operations cannot outlive the caller's own timeout much:
    a `RedisCluster` for a cluster URL, else a `Redis`. Neither connects before its first
    command, so the gateway starts while Redis is down."""
    connect_timeout, socket_timeout = max(timeout_s, 0.05), max(timeout_s * 4, 0.2)
    parts = urlsplit(url.strip())
    plain_scheme = CLUSTER_SCHEMES.get(parts.scheme.lower())
    if plain_scheme is None:
        return aioredis.Redis.from_url(
            url,
            socket_connect_timeout=connect_timeout,
            socket_timeout=socket_timeout,
            health_check_interval=30,
            max_connections=256,
        )
    seed = parts._replace(scheme=plain_scheme, path="").geturl()
    return RedisCluster.from_url(
        seed,
        socket_connect_timeout=connect_timeout,
        socket_timeout=socket_timeout,
        health_check_interval=30,
        max_connections=256,  # per node
    )
