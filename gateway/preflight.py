"""What `gateway serve` checks before it starts a worker, beyond the variables' own syntax
(`Settings.from_env`): what the machine must provide for them. Each failure is a
SettingsError naming the variable, so it stops the gateway with status 2 instead of a worker
failing its startup (or, worse, a gateway that runs and never turns ready)."""

from __future__ import annotations

import socket

from cache.embedder_store import INT8_FILE
from cache.semantic_packages import check_semantic_packages
from core.env import SettingsError, check_writable_dir, holds_entries
from gateway.settings import Settings


def check_machine(settings: Settings) -> None:
    """The semantic cache's packages, caches the workers can write, an address to listen on."""
    check_semantic(settings)
    if settings.backends.fetches_tokenizers:
        check_writable_dir("GATEWAY_TOKENIZER_CACHE_DIR", settings.backends.tokenizer_cache_dir)
    check_listen_address(settings.host, settings.port)


def check_semantic(settings: Settings) -> None:
    """An empty (or missing) embedding cache is filled by the first worker: the ONNX export and
    the clause judge's model are written there, by packages a serving image may lack; so is
    the int8 copy of a cache that holds none (GATEWAY_EMBEDDING_PRECISION=int8)."""
    cache = settings.cache
    if cache.semantic == "off":
        return
    fills = not holds_entries(cache.embedding_cache_dir)
    quantizes = cache.embedding_precision == "int8" and not any(
        cache.embedding_cache_dir.glob(f"*/{INT8_FILE}")
    )
    if (fills or quantizes) and (
        cache.embedding_backend == "onnx" or cache.semantic_clause_adapter
    ):
        check_writable_dir("GATEWAY_EMBEDDING_CACHE_DIR", cache.embedding_cache_dir)
    check_semantic_packages(cache, fills_cache=fills, quantizes=quantizes)


def check_listen_address(host: str, port: int) -> None:
    """`host` resolves to an address of this machine on which `port` is free: bound once
    and released (with SO_REUSEADDR, as the server binds it). Any of the addresses it
    resolves to will do, as the server too tries them in turn."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (socket.gaierror, UnicodeError) as exc:
        raise SettingsError(
            f"GATEWAY_HOST={host!r} does not resolve to an address to listen on ({exc})"
        ) from None
    failure: OSError | None = None
    for family, kind, proto, _, address in infos:
        try:
            with socket.socket(family, kind, proto) as sock:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                sock.bind(address)
        except OSError as exc:  # not this machine's, in use, or a family the kernel lacks
            failure = failure or exc
        else:
            return
    reason = (failure.strerror or str(failure)) if failure is not None else "no address"
    raise SettingsError(
        f"cannot listen on GATEWAY_HOST={host!r}, GATEWAY_PORT={port} ({reason}): "
        "is the address this machine's, the port free?"
    )
