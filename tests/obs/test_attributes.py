"""Span and attribute names agree with the installed OpenTelemetry semantic conventions."""

from __future__ import annotations

import pytest
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as semconv

from obs.attributes import (
    GEN_AI_PROVIDER_NAME,
    GEN_AI_PROVIDER_OPENAI,
    GEN_AI_SYSTEM,
    gen_ai_provider,
    server_endpoint,
)


def test_gen_ai_names_are_the_conventions() -> None:
    """The provider attribute, its deprecated predecessor and the OpenAI value are semconv's."""
    assert GEN_AI_PROVIDER_NAME == semconv.GEN_AI_PROVIDER_NAME
    assert GEN_AI_SYSTEM == semconv.GEN_AI_SYSTEM
    assert semconv.GenAiProviderNameValues.OPENAI.value == GEN_AI_PROVIDER_OPENAI


@pytest.mark.parametrize(
    ("replica", "provider"),
    [
        ("grpc://10.0.0.5:50051", "vllm"),
        ("http://10.0.0.6:8000/v1", "openai"),
        ("https://api.example.com/v1", "openai"),
        ("fake://a", None),
    ],
)
def test_provider_follows_the_replica_url_scheme(replica: str, provider: str | None) -> None:
    """vLLM over its gRPC protocol, OpenAI over the OpenAI REST API; unknown for anything else."""
    assert gen_ai_provider(replica) == provider


@pytest.mark.parametrize(
    ("replica", "endpoint"),
    [
        ("grpc://10.0.0.5:50051", ("10.0.0.5", 50051)),
        ("http://vllm-0.vllm:8000/v1", ("vllm-0.vllm", 8000)),
        ("https://api.example.com/v1", ("api.example.com", 443)),
        ("http://[::1]:9000", ("::1", 9000)),
        ("grpc://host-without-port", None),
        ("test-double", None),
        ("http://bad:port", None),
    ],
)
def test_server_endpoint_is_read_from_the_replica_url(
    replica: str, endpoint: tuple[str, int] | None
) -> None:
    """Host and port from the URL, the scheme's port for http(s), nothing where none is named."""
    assert server_endpoint(replica) == endpoint
