"""Replica URLs: checked at startup naming GATEWAY_BACKENDS, and never shown with a credential."""

from __future__ import annotations

import pytest

from backends.factory import build_replicas
from backends.replica_urls import parse_replica_url, redact
from backends.settings import BackendSettings
from core.env import SettingsError

SECRET = "s3cretpass"


def _backends(raw: str) -> BackendSettings:
    return BackendSettings.from_env({"GATEWAY_BACKENDS": raw})


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("grpc://a:1", "grpc://a:1"),
        ("grpc://[::1]:50051", "grpc://[::1]:50051"),
        ("http://c:3/v1/", "http://c:3/v1"),
        ("https://api.example.com/openai/v1", "https://api.example.com/openai/v1"),
        ("http+dns://svc:8000/v1", "http+dns://svc:8000/v1"),
    ],
)
def test_well_formed_urls_are_accepted(url: str, shown: str) -> None:
    """gRPC host:port, HTTP with an API path, and DNS sets parse as written, less a slash."""
    assert parse_replica_url(url, "m").url == shown


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        ("m=grpc://127.0.0.1", "no port"),
        ("m=grpc://127.0.0.1:99999", "port"),
        ("m=grpc://127.0.0.1:0", "no port"),
        ("m=grpc://127.0.0.1:18201/foo", "no path"),
        ("m=grpc://:18201", "no host"),
        ("m=http://127.0.0.1:18202", "no API path"),
        ("m=http://127.0.0.1:18202/", "no API path"),
        ("m=http+dns://svc:8000", "no API path"),
        ("m=http://h:1/v1?x=1", "query"),
        ("m=grpc://user:pw@h:1", "no credentials"),
        ("m=http://justuser@h:1/v1", "password"),
        ("m=grpc://h:1,grpc://h:1", "twice"),
        ("m=grpc://h:1,", "empty replica"),
        ("m=grpc://h:1,,grpc://h:2", "empty replica"),
        ("m=grpc://[::1:1", "not a valid URL"),
        ("m=http://[::1/v1", "not a valid URL"),
        ("m=grpc+dns://[::1:50051", "not a valid URL"),
    ],
)
def test_malformed_urls_stop_the_gateway(raw: str, says: str) -> None:
    """Each malformed replica URL is a SettingsError naming GATEWAY_BACKENDS and the fault."""
    with pytest.raises(SettingsError, match="GATEWAY_BACKENDS") as info:
        _backends(raw)
    assert says in str(info.value)


def test_the_password_is_the_api_key_and_leaves_the_url() -> None:
    """`http://user:KEY@host/v1`: KEY (percent-decoded) is the API key; the URL drops it."""
    replica = parse_replica_url(f"http://user:{SECRET}%2F1@127.0.0.1:18202/v1", "m")
    assert replica.url == "http://127.0.0.1:18202/v1"
    assert replica.api_key == f"{SECRET}/1"
    assert SECRET not in repr(replica)


def test_replicas_are_built_and_shown_without_the_credential() -> None:
    """The replica's URL, which labels metrics, logs and spans, never holds the password."""
    settings = _backends(
        f"m=http://user:{SECRET}@127.0.0.1:18202/v1;d=https+dns://:{SECRET}@s:1/v1"
    )
    (replica,) = build_replicas(settings)
    assert replica.url == "http://127.0.0.1:18202/v1"
    assert SECRET not in repr(settings)


@pytest.mark.parametrize(
    "raw",
    [
        f"m=http://u:{SECRET}@h:1",
        f"m=grpc://u:{SECRET}@h:1",
        f"m:http://u:{SECRET}@h/v1",
        f"m=http://u:{SECRET}/x@h",
    ],
)
def test_errors_never_quote_the_credential(raw: str) -> None:
    """A refused URL is named without its password."""
    with pytest.raises(SettingsError) as info:
        _backends(raw)
    assert SECRET not in str(info.value)


def test_redact_drops_only_the_userinfo() -> None:
    """user:password@ goes; scheme, host, port and path stay."""
    assert redact("http://u:p@w@h:1/v1") == "http://h:1/v1"
    assert redact("http://:ab/cd@h:1/v1") == "http://h:1/v1"
    assert redact("grpc://h:1") == "grpc://h:1"
