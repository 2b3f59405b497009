"""Replica URLs from `GATEWAY_BACKENDS`, checked once at startup and taken apart, so that the
URL dialled, logged, labelled and traced never carries a credential.

An OpenAI-compatible server's API key rides in the URL's password,
`http(s)://:KEY@host:port/v1` (percent-encoded where needed), and is sent as
`Authorization: Bearer KEY`; everywhere else the URL appears without it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import unquote, urlsplit

from core.digits import ascii_digits
from core.env import SettingsError

DNS_SUFFIX = "+dns"
_SCHEMES = ("grpc", "http", "https")
_FORMS = (
    "grpc://host:port or http(s)://host:port/v1 (grpc+dns://name:port for every address of "
    "a DNS name)"
)


@dataclass(frozen=True, slots=True)
class ReplicaSpec:
    """One backend replica, `grpc://host:port` or `http(s)://host:port/v1`, or a set of them
    named in DNS, `grpc+dns://name:port` or `http(s)+dns://name:port/v1` (every A/AAAA record
    of `name` is a replica, re-resolved every `GATEWAY_DNS_REFRESH_S`)."""

    url: str  # without credentials
    api_key: str | None = field(default=None, repr=False)  # HTTP only: sent as a Bearer token

    @property
    def scheme(self) -> str:
        return self.url.split("://", 1)[0]

    @property
    def dns(self) -> bool:
        """The URL names a DNS replica set rather than one replica."""
        return self.scheme.endswith(DNS_SUFFIX)


def redact(url: str) -> str:
    """`url` without its userinfo (`user:password@`): the only form a replica URL is shown in.
    Everything up to the last `@` goes, so a key with an unencoded `/` is not shown either."""
    scheme, sep, rest = url.partition("://")
    return f"{scheme}{sep}{rest.rpartition('@')[2]}"


def parse_replica_url(url: str, model: str) -> ReplicaSpec:
    """One replica URL of `model`, checked; errors name `GATEWAY_BACKENDS` and never the key."""
    shown = redact(url).rstrip("/")
    where = f"GATEWAY_BACKENDS: replica {shown!r} of model {model!r}"
    scheme, sep, rest = url.partition("://")
    base = scheme.removesuffix(DNS_SUFFIX)
    if not sep or base not in _SCHEMES or not rest:
        raise SettingsError(f"{where} must be {_FORMS}")
    try:
        parts = urlsplit(shown)
    except ValueError as exc:  # an unclosed "[" of an IPv6 address
        raise SettingsError(f"{where} is not a valid URL ({exc})") from None
    try:
        port = parts.port
    except ValueError:
        raise SettingsError(f"{where}: the port must be a number from 1 to 65535") from None
    if not parts.hostname:
        raise SettingsError(f"{where} names no host")
    if port == 0 or (port is None and (base == "grpc" or base != scheme)):
        raise SettingsError(f"{where} names no port (1 to 65535)")
    if parts.query or parts.fragment:
        raise SettingsError(f"{where} may have no query or fragment")
    path = parts.path.rstrip("/")
    if base == "grpc" and path:
        raise SettingsError(f"{where} may have no path: grpc://host:port")
    if base != "grpc" and not path:
        raise SettingsError(f"{where} names no API path: http(s)://host:port/v1")
    return ReplicaSpec(shown, _api_key(rest, base, where))


def _api_key(rest: str, base: str, where: str) -> str | None:
    userinfo, at, _ = rest.rpartition("@")
    if not at:
        return None
    _, colon, password = userinfo.partition(":")
    if base == "grpc":
        raise SettingsError(f"{where}: a gRPC replica takes no credentials")
    if not colon or not password:
        raise SettingsError(f"{where}: put the API key in the password: http(s)://:KEY@host/v1")
    return unquote(password)


@dataclass(frozen=True, slots=True)
class DnsTarget:
    """A `+dns` URL taken apart: resolve `host`, and each address at `port` is a replica
    reached as `scheme://ADDRESS:port{path}`."""

    scheme: str
    host: str
    port: int
    path: str

    def replica_url(self, address: str, port: int | None = None) -> str:
        host = f"[{address}]" if ":" in address else address
        return f"{self.scheme}://{host}:{self.port if port is None else port}{self.path}"


def split_dns_url(url: str) -> DnsTarget:
    """`grpc+dns://name:port[/path]` as a DnsTarget; ValueError names what is missing."""
    shown = redact(url)
    scheme, _, rest = shown.partition("://")
    hostport, slash, path = rest.partition("/")
    host, colon, port = hostport.rpartition(":")
    if not colon or not host or not ascii_digits(port) or not 0 < int(port) < 65536:
        raise ValueError(f"{shown!r} must name a host and a port (grpc+dns://name:port)")
    return DnsTarget(scheme.removesuffix(DNS_SUFFIX), host, int(port), (slash + path).rstrip("/"))
