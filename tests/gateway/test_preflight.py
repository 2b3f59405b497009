"""gateway/preflight.py: what the workers need of the machine is checked before they start."""

from __future__ import annotations

import importlib.util
import socket
from pathlib import Path

import pytest

from core.env import SettingsError
from gateway.preflight import check_listen_address, check_machine
from gateway.settings import Settings


@pytest.mark.parametrize("host", ["example.invalid", "no-such-host.invalid"])
def test_a_host_that_does_not_resolve_names_gateway_host(host: str) -> None:
    """A listen host that resolves to nothing stops startup naming GATEWAY_HOST."""
    with pytest.raises(SettingsError, match=f"GATEWAY_HOST='{host}' does not resolve"):
        check_listen_address(host, 0)


def test_an_address_of_another_machine_names_gateway_host() -> None:
    """An address this machine does not have (TEST-NET-1) cannot be listened on."""
    with pytest.raises(SettingsError, match=r"cannot listen on GATEWAY_HOST='192\.0\.2\.1'"):
        check_listen_address("192.0.2.1", 0)


def test_any_address_the_host_resolves_to_will_do(monkeypatch: pytest.MonkeyPatch) -> None:
    """A name whose first address is not this machine's still passes when another is, as
    the server tries them in turn."""
    resolve = socket.getaddrinfo
    first = resolve("192.0.2.1", 0, type=socket.SOCK_STREAM)[0]
    monkeypatch.setattr(
        socket, "getaddrinfo", lambda *args, **kwargs: [first, *resolve("127.0.0.1", 0)]
    )
    check_listen_address("gateway.example", 0)


def test_an_address_family_the_kernel_lacks_names_gateway_host(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A socket the kernel cannot make (`::` without IPv6) is a refusal naming the variable,
    not a traceback."""

    def no_family(*args: object, **kwargs: object) -> socket.socket:
        raise OSError(97, "Address family not supported by protocol")

    monkeypatch.setattr(socket, "socket", no_family)
    with pytest.raises(SettingsError, match=r"GATEWAY_HOST='::'.*Address family not supported"):
        check_listen_address("::", 0)


def test_a_port_in_use_names_both_variables() -> None:
    """A port another socket listens on stops startup naming GATEWAY_HOST and GATEWAY_PORT."""
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(SettingsError, match=f"GATEWAY_PORT={port}"):
            check_listen_address("127.0.0.1", port)
    check_listen_address("127.0.0.1", port)  # released: free again


def test_an_unwritable_tokenizer_cache_names_its_variable(tmp_path: Path) -> None:
    """A gRPC model fetches its tokenizer: a cache directory nobody can create is refused."""
    env = {"GATEWAY_BACKENDS": "m=grpc://h:1", "GATEWAY_PORT": "0"}
    with pytest.raises(SettingsError, match="GATEWAY_TOKENIZER_CACHE_DIR: /proc/1/x"):
        check_machine(Settings.from_env({**env, "GATEWAY_TOKENIZER_CACHE_DIR": "/proc/1/x"}))
    http = {"GATEWAY_BACKENDS": "m=http://h:1/v1", "GATEWAY_PORT": "0"}
    check_machine(Settings.from_env({**http, "GATEWAY_TOKENIZER_CACHE_DIR": "/proc/1/x"}))
    check_machine(Settings.from_env({**env, "GATEWAY_TOKENIZER_CACHE_DIR": str(tmp_path / "t")}))
    assert (tmp_path / "t").is_dir()


def test_an_empty_embedding_cache_must_be_writable(tmp_path: Path) -> None:
    """The semantic cache's first worker writes its ONNX export into an empty embedding
    cache: one nobody can create is refused naming the variable; a filled one is only read."""
    env = {
        "GATEWAY_BACKENDS": "m=http://h:1/v1",
        "GATEWAY_PORT": "0",
        "GATEWAY_SEMANTIC_CACHE": "on",
    }
    with pytest.raises(SettingsError, match="GATEWAY_EMBEDDING_CACHE_DIR: /proc/1/x"):
        check_machine(Settings.from_env({**env, "GATEWAY_EMBEDDING_CACHE_DIR": "/proc/1/x"}))
    check_machine(Settings.from_env({**env, "GATEWAY_EMBEDDING_CACHE_DIR": str(tmp_path / "e")}))
    assert (tmp_path / "e").is_dir()
    off = {**env, "GATEWAY_SEMANTIC_CACHE": "off", "GATEWAY_EMBEDDING_CACHE_DIR": "/proc/1/x"}
    check_machine(Settings.from_env(off))


def test_int8_on_a_cache_without_its_copy_needs_onnx(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cache filled by an export but holding no int8 copy: int8 quantizes at the first
    worker's start, so a machine without onnx stops here naming the precision; with a copy
    in the cache (or at fp32) nothing more is needed."""
    real = importlib.util.find_spec
    monkeypatch.setattr(
        "cache.semantic_packages.find_spec", lambda name: None if name == "onnx" else real(name)
    )
    (tmp_path / "v1-0123" / "model.onnx").parent.mkdir()
    (tmp_path / "v1-0123" / "model.onnx").write_bytes(b"graph")
    env = {
        "GATEWAY_BACKENDS": "m=http://h:1/v1",
        "GATEWAY_PORT": "0",
        "GATEWAY_SEMANTIC_CACHE": "on",
        "GATEWAY_EMBEDDING_CACHE_DIR": str(tmp_path),
    }
    check_machine(Settings.from_env(env))
    int8 = {**env, "GATEWAY_EMBEDDING_PRECISION": "int8"}
    with pytest.raises(SettingsError, match="GATEWAY_EMBEDDING_PRECISION=int8"):
        check_machine(Settings.from_env(int8))
    (tmp_path / "v1-0123" / "model.int8.onnx").write_bytes(b"int8 graph")
    check_machine(Settings.from_env(int8))
