"""The standard OTEL_* variables, read from a mapping, into a TracerProvider.

The SDK's own constructors read `os.environ`; everything is parsed here from the mapping
instead and passed explicitly, so `Tracing.from_env(mapping)` means what the mapping says.
Values the gateway cannot honour stop startup with a `SettingsError` naming the variable.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import unquote

import grpc
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    ConsoleSpanExporter,
    SpanExporter,
)
from opentelemetry.sdk.trace.sampling import (
    ALWAYS_OFF,
    ALWAYS_ON,
    DEFAULT_OFF,
    DEFAULT_ON,
    ParentBasedTraceIdRatio,
    Sampler,
    TraceIdRatioBased,
)
from opentelemetry.util.re import parse_env_headers

from core.env import HOUR_S, SettingsError, env_bool, env_float, env_int
from obs.otlp_tls import TlsFiles, endpoint_scheme, signal_name, signal_value, tls_files

DEFAULT_SERVICE_NAME = "llm-gateway"
_HOUR_MS = HOUR_S * 1000  # the longest delay or timeout, in the specification's milliseconds
DEFAULT_SAMPLER = "parentbased_traceidratio"
DEFAULT_SAMPLER_RATIO = 0.1
_EXPORTERS = ("otlp", "console")
_SAMPLERS = {
    "always_on": ALWAYS_ON,
    "always_off": ALWAYS_OFF,
    "parentbased_always_on": DEFAULT_ON,
    "parentbased_always_off": DEFAULT_OFF,
}
_RATIO_SAMPLERS = {
    "traceidratio": TraceIdRatioBased,
    "parentbased_traceidratio": ParentBasedTraceIdRatio,
}
_COMPRESSION = {
    "none": grpc.Compression.NoCompression,
    "gzip": grpc.Compression.Gzip,
    "deflate": grpc.Compression.Deflate,
}


@dataclass(frozen=True)
class OtlpConfig:
    """Where and how the OTLP/gRPC exporter sends spans."""

    endpoint: str
    insecure: bool
    headers: dict[str, str] = field(default_factory=dict)
    timeout_s: float = 10.0
    compression: grpc.Compression = grpc.Compression.NoCompression
    tls: TlsFiles = field(default_factory=TlsFiles)  # read at startup


@dataclass(frozen=True)
class TracingConfig:
    """Everything `build_provider` needs; `None` from `tracing_config` means tracing is off."""

    exporters: tuple[str, ...]
    otlp: OtlpConfig | None
    sampler: Sampler
    resource_attributes: dict[str, str]
    schedule_delay_ms: int
    max_queue_size: int
    max_export_batch_size: int
    export_timeout_ms: int


def tracing_config(env: Mapping[str, str]) -> TracingConfig | None:
    """Parse the OTEL_* variables; `None` when no trace exporter was asked for."""
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    exporters = _exporters(env)
    if not exporters:
        return None
    max_queue_size = env_int(env, "OTEL_BSP_MAX_QUEUE_SIZE", 2048, low=1, high=1_000_000)
    return TracingConfig(
        exporters=exporters,
        otlp=_otlp(env) if "otlp" in exporters else None,
        sampler=_sampler(env),
        resource_attributes=_resource_attributes(env),
        schedule_delay_ms=env_int(env, "OTEL_BSP_SCHEDULE_DELAY", 5000, low=1, high=_HOUR_MS),
        max_queue_size=max_queue_size,
        max_export_batch_size=_export_batch_size(env, max_queue_size),
        export_timeout_ms=env_int(env, "OTEL_BSP_EXPORT_TIMEOUT", 30000, low=1, high=_HOUR_MS),
    )


def _export_batch_size(env: Mapping[str, str], max_queue_size: int) -> int:
    """OTEL_BSP_MAX_EXPORT_BATCH_SIZE, at most the queue it is taken from (the SDK's
    BatchSpanProcessor refuses a larger one, in each worker); the default shrinks to fit."""
    name = "OTEL_BSP_MAX_EXPORT_BATCH_SIZE"
    size = env_int(env, name, min(512, max_queue_size), low=1, high=1_000_000)
    if size > max_queue_size:
        raise SettingsError(
            f"{name} must not exceed OTEL_BSP_MAX_QUEUE_SIZE ({size} > {max_queue_size}): "
            "lower the batch size or raise the queue size"
        )
    return size


def record_content(env: Mapping[str, str]) -> bool:
    """GATEWAY_TRACE_CONTENT: the only switch that lets prompt/answer text into spans/logs."""
    return env_bool(env, "GATEWAY_TRACE_CONTENT", False)


def build_provider(config: TracingConfig) -> TracerProvider:
    """A private provider with one background BatchSpanProcessor per exporter."""
    provider = TracerProvider(
        sampler=config.sampler, resource=Resource.create(config.resource_attributes)
    )
    for name in config.exporters:
        exporter = _otlp_exporter(config.otlp) if config.otlp and name == "otlp" else None
        provider.add_span_processor(
            BatchSpanProcessor(
                exporter or ConsoleSpanExporter(out=sys.stdout),
                max_queue_size=config.max_queue_size,
                schedule_delay_millis=config.schedule_delay_ms,
                max_export_batch_size=config.max_export_batch_size,
                export_timeout_millis=config.export_timeout_ms,
            )
        )
    return provider


def _exporters(env: Mapping[str, str]) -> tuple[str, ...]:
    raw = env.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if not raw:
        endpoint_set = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or env.get(
            "OTEL_EXPORTER_OTLP_ENDPOINT"
        )
        return ("otlp",) if endpoint_set else ()
    names = tuple(dict.fromkeys(n.strip() for n in raw.split(",") if n.strip()))
    for name in names:
        if name != "none" and name not in _EXPORTERS:
            raise SettingsError(
                f"OTEL_TRACES_EXPORTER: {name!r} is not supported; use otlp, console or none"
            )
    return tuple(n for n in names if n != "none")


def _otlp(env: Mapping[str, str]) -> OtlpConfig:
    protocol = (signal_value(env, "PROTOCOL") or "grpc").strip().lower()
    if protocol != "grpc":
        raise SettingsError(
            f"{signal_name(env, 'PROTOCOL')}={protocol!r} is not supported: the gateway "
            "exports OTLP over gRPC only (set grpc, or send to a collector's gRPC port 4317)"
        )
    endpoint = (signal_value(env, "ENDPOINT") or "http://localhost:4317").strip()
    scheme = endpoint_scheme(endpoint, signal_name(env, "ENDPOINT"))
    if scheme == "https":
        insecure = False
    else:
        insecure = env_bool(env, signal_name(env, "INSECURE"), scheme == "http")
    compression_raw = (signal_value(env, "COMPRESSION") or "none").strip().lower()
    if compression_raw not in _COMPRESSION:
        raise SettingsError(
            f"{signal_name(env, 'COMPRESSION')} must be gzip, deflate or none; "
            f"got {compression_raw!r}"
        )
    # The specification gives the timeout in milliseconds (the Python SDK reads seconds).
    timeout_name = signal_name(env, "TIMEOUT")
    timeout_ms = env_float(env, timeout_name, 10_000, low=1, high=_HOUR_MS)
    return OtlpConfig(
        endpoint=endpoint,
        insecure=insecure,
        headers=dict(parse_env_headers(signal_value(env, "HEADERS") or "", liberal=True)),
        timeout_s=timeout_ms / 1000,
        compression=_COMPRESSION[compression_raw],
        tls=TlsFiles() if insecure else tls_files(env),
    )


def _otlp_exporter(config: OtlpConfig) -> SpanExporter:
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter(
        endpoint=config.endpoint,
        insecure=config.insecure,
        credentials=None if config.insecure else config.tls.credentials(),
        headers=config.headers or None,
        timeout=config.timeout_s,
        compression=config.compression,
    )


def _sampler(env: Mapping[str, str]) -> Sampler:
    """The OTEL_TRACES_SAMPLER sampler. Unset, the gateway traces 1 request in 10 that the
    client did not ask to trace (`parentbased_traceidratio`, 0.1) rather than the SDK's
    `parentbased_always_on`: a recorded request costs a few hundred microseconds of CPU,
    which at full rate would be a noticeable share of a busy gateway's time."""
    name = env.get("OTEL_TRACES_SAMPLER", "").strip().lower()
    default_ratio = 1.0
    if not name:
        name, default_ratio = DEFAULT_SAMPLER, DEFAULT_SAMPLER_RATIO
    if name in _SAMPLERS:
        return _SAMPLERS[name]
    if name in _RATIO_SAMPLERS:
        ratio = env_float(env, "OTEL_TRACES_SAMPLER_ARG", default_ratio, low=0.0, high=1.0)
        return _RATIO_SAMPLERS[name](ratio)
    options = ", ".join([*_SAMPLERS, *_RATIO_SAMPLERS])
    raise SettingsError(f"OTEL_TRACES_SAMPLER must be one of {options}; got {name!r}")


def _resource_attributes(env: Mapping[str, str]) -> dict[str, str]:
    attributes: dict[str, str] = {}
    for item in env.get("OTEL_RESOURCE_ATTRIBUTES", "").split(","):
        key, sep, value = item.partition("=")
        if not item.strip():
            continue
        if not sep or not key.strip():
            raise SettingsError(f"OTEL_RESOURCE_ATTRIBUTES: expected key=value, got {item!r}")
        attributes[key.strip()] = unquote(value.strip())
    service_name = env.get("OTEL_SERVICE_NAME", "").strip()
    if service_name:
        attributes[SERVICE_NAME] = service_name
    attributes.setdefault(SERVICE_NAME, DEFAULT_SERVICE_NAME)
    return attributes
