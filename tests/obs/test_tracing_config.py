from __future__ import annotations

import grpc
import pytest
from opentelemetry.sdk.trace.sampling import (
    ALWAYS_OFF,
    ParentBasedTraceIdRatio,
)

from core.env import SettingsError
from obs.tracing_config import tracing_config


def test_endpoint_alone_selects_otlp_grpc_with_defaults() -> None:
    """An OTLP endpoint is enough: OTLP over gRPC, plaintext for http://, spec defaults but
    for the sampler (1 in 10 of the requests the client did not ask to trace)."""
    config = tracing_config({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4317"})
    assert config is not None and config.otlp is not None
    assert config.exporters == ("otlp",)
    assert config.otlp.endpoint == "http://collector:4317"
    assert config.otlp.insecure
    assert config.otlp.timeout_s == 10.0
    assert config.otlp.compression is grpc.Compression.NoCompression
    assert isinstance(config.sampler, ParentBasedTraceIdRatio)
    description = config.sampler.get_description()  # type: ignore[no-untyped-call]
    assert description.startswith("ParentBased{root:TraceIdRatioBased{0.1}")
    assert config.resource_attributes == {"service.name": "llm-gateway"}
    assert (config.schedule_delay_ms, config.max_queue_size) == (5000, 2048)


def test_traces_specific_variables_win() -> None:
    """OTEL_EXPORTER_OTLP_TRACES_* override the OTEL_EXPORTER_OTLP_* of all signals."""
    config = tracing_config(
        {
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://all:4317",
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://traces:4317",
            "OTEL_EXPORTER_OTLP_TIMEOUT": "1000",
            "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "2500",
            "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION": "gzip",
            "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "authorization=Bearer%20abc,x-a=b",
        }
    )
    assert config is not None and config.otlp is not None
    assert config.otlp.endpoint == "https://traces:4317"
    assert not config.otlp.insecure
    assert config.otlp.timeout_s == 2.5
    assert config.otlp.compression is grpc.Compression.Gzip
    assert config.otlp.headers == {"authorization": "Bearer abc", "x-a": "b"}


def test_service_name_resource_and_sampler() -> None:
    """OTEL_SERVICE_NAME beats service.name in OTEL_RESOURCE_ATTRIBUTES; samplers by name."""
    config = tracing_config(
        {
            "OTEL_TRACES_EXPORTER": "console,otlp",
            "OTEL_SERVICE_NAME": "edge",
            "OTEL_RESOURCE_ATTRIBUTES": "service.name=ignored, team=llm%20infra",
            "OTEL_TRACES_SAMPLER": "parentbased_traceidratio",
            "OTEL_TRACES_SAMPLER_ARG": "0.25",
        }
    )
    assert config is not None
    assert config.exporters == ("console", "otlp")
    assert config.resource_attributes == {"service.name": "edge", "team": "llm infra"}
    assert isinstance(config.sampler, ParentBasedTraceIdRatio)
    assert "0.25" in config.sampler.get_description()  # type: ignore[no-untyped-call]


def test_always_off_sampler() -> None:
    """OTEL_TRACES_SAMPLER=always_off is honoured."""
    config = tracing_config({"OTEL_TRACES_EXPORTER": "otlp", "OTEL_TRACES_SAMPLER": "always_off"})
    assert config is not None and config.sampler is ALWAYS_OFF


@pytest.mark.parametrize(
    ("env", "variable"),
    [
        ({"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}, "OTEL_EXPORTER_OTLP_PROTOCOL"),
        (
            {"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/json"},
            "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
        ),
        ({"OTEL_TRACES_EXPORTER": "zipkin"}, "OTEL_TRACES_EXPORTER"),
        ({"OTEL_TRACES_SAMPLER": "sometimes"}, "OTEL_TRACES_SAMPLER"),
        (
            {"OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "2"},
            "OTEL_TRACES_SAMPLER_ARG",
        ),
        ({"OTEL_EXPORTER_OTLP_COMPRESSION": "brotli"}, "OTEL_EXPORTER_OTLP_COMPRESSION"),
        ({"OTEL_EXPORTER_OTLP_TIMEOUT": "soon"}, "OTEL_EXPORTER_OTLP_TIMEOUT"),
        ({"OTEL_RESOURCE_ATTRIBUTES": "team"}, "OTEL_RESOURCE_ATTRIBUTES"),
        ({"OTEL_BSP_MAX_QUEUE_SIZE": "0"}, "OTEL_BSP_MAX_QUEUE_SIZE"),
    ],
)
def test_invalid_values_name_the_variable(env: dict[str, str], variable: str) -> None:
    """A value the gateway cannot honour stops startup with a message naming the variable."""
    with pytest.raises(SettingsError, match=variable):
        tracing_config({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4317", **env})


def test_an_export_batch_above_the_queue_names_both_variables() -> None:
    """A batch larger than the queue it is taken from stops startup naming both variables."""
    env = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4317",
        "OTEL_BSP_MAX_QUEUE_SIZE": "100",
        "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "200",
    }
    with pytest.raises(SettingsError) as info:
        tracing_config(env)
    assert "OTEL_BSP_MAX_EXPORT_BATCH_SIZE" in str(info.value)
    assert "OTEL_BSP_MAX_QUEUE_SIZE" in str(info.value)
    config = tracing_config({**env, "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "100"})
    assert config is not None and config.max_export_batch_size == 100


@pytest.mark.parametrize(
    "name",
    [
        "OTEL_BSP_SCHEDULE_DELAY",
        "OTEL_BSP_MAX_QUEUE_SIZE",
        "OTEL_BSP_MAX_EXPORT_BATCH_SIZE",
        "OTEL_BSP_EXPORT_TIMEOUT",
        "OTEL_EXPORTER_OTLP_TIMEOUT",
    ],
)
def test_huge_exporter_numbers_are_refused(name: str) -> None:
    """Delays, timeouts and queue sizes have upper bounds: 10**17 stops startup naming them."""
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4317", name: str(10**17)}
    with pytest.raises(SettingsError, match=f"{name}.* must be between 1 and"):
        tracing_config(env)
