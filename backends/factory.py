"""Builds one backend per configured replica URL, by scheme, and the discovery of the
replica sets named in DNS."""

from __future__ import annotations

from backends.base import Backend
from backends.discovery import Discovery, ReplicaSet, Resolver, resolve_dns
from backends.fleet import Fleet
from backends.replica import Replica
from backends.settings import BackendSettings


def build_backend(
    model: str, url: str, settings: BackendSettings, api_key: str | None = None
) -> Backend:
    """The backend of one replica at `url` (without credentials); `api_key` is HTTP's."""
    scheme = url.split("://", 1)[0]
    if scheme == "grpc":
        from backends.vllm_grpc.client import VllmGrpcBackend

        return VllmGrpcBackend(
            url,
            model=model,
            channels=settings.grpc_channels,
            tokenizer_dir=settings.tokenizer_dirs.get(model),
            tokenizer_cache_dir=settings.tokenizer_cache_dir,
            tool_format=settings.tool_parsers.get(model),
            reasoning_format=settings.reasoning_parsers.get(model),
            watch_whole_answers=settings.watch_whole_answers,
            split_special_tokens=settings.split_special_tokens,
            generation_config=settings.generation_config == "auto",
        )
    from backends.openai_http import OpenAIHTTPBackend

    return OpenAIHTTPBackend(
        url,
        model=model,
        max_connections=settings.http_connections,
        api_key=api_key,
        longest_retry_after_s=settings.outliers.max_ejection_s,
    )


def build_replicas(settings: BackendSettings) -> list[Replica]:
    """The statically named replicas (`+dns` sets are the discovery's)."""
    return [
        Replica(spec.name, build_backend(spec.name, replica.url, settings, replica.api_key))
        for spec in settings.models
        for replica in spec.replicas
        if not replica.dns
    ]


def build_discovery(
    settings: BackendSettings, fleet: Fleet, resolver: Resolver | None = None
) -> Discovery | None:
    """The discovery of the `+dns` replica sets, or None when every replica is static."""
    sets = [
        ReplicaSet(spec.name, replica.url, replica.api_key)
        for spec in settings.models
        for replica in spec.replicas
        if replica.dns
    ]
    if not sets:
        return None
    return Discovery(
        fleet,
        sets,
        lambda model, url, api_key: build_backend(model, url, settings, api_key),
        refresh_s=settings.dns_refresh_s,
        resolver=resolver or resolve_dns,
    )
