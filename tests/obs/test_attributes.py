"""Span and attribute names agree with the installed OpenTelemetry semantic conventions."""

from __future__ import annotations

import pytest
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as semconv

from obs.attributes import (
    GEN_AI_PROVIDER_NAME,
    GEN_AI_PROVIDER_OPENAI,
    GEN_AI_SYSTEM,
    gen_ai_provider,
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
