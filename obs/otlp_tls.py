"""The OTLP exporter's endpoint and TLS files, from the standard OTEL_EXPORTER_OTLP_* variables,
checked and read at startup: a missing certificate or a malformed endpoint stops the gateway
naming its variable, rather than each worker when it builds its exporter."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import grpc

from core.env import SettingsError


def signal_value(env: Mapping[str, str], suffix: str) -> str | None:
    """OTEL_EXPORTER_OTLP_TRACES_<suffix>, else OTEL_EXPORTER_OTLP_<suffix>."""
    return env.get(f"OTEL_EXPORTER_OTLP_TRACES_{suffix}") or env.get(f"OTEL_EXPORTER_OTLP_{suffix}")


def signal_name(env: Mapping[str, str], suffix: str) -> str:
    """The name of the variable `signal_value` read (for messages)."""
    specific = f"OTEL_EXPORTER_OTLP_TRACES_{suffix}"
    return specific if env.get(specific) else f"OTEL_EXPORTER_OTLP_{suffix}"


def endpoint_scheme(endpoint: str, name: str) -> str:
    """The scheme of the OTLP endpoint `endpoint` (variable `name`), once its host and port
    parse."""
    try:
        parts = urlsplit(endpoint)
        port = parts.port
    except ValueError as exc:  # "Invalid IPv6 URL", a port out of range or not a number
        raise SettingsError(
            f"{name} must be a URL such as http://collector:4317, got {endpoint!r} ({exc})"
        ) from None
    if parts.scheme in ("http", "https") and (not parts.hostname or port == 0):
        raise SettingsError(
            f"{name} must name a host and a port from 1 to 65535 (http://collector:4317), "
            f"got {endpoint!r}"
        )
    return parts.scheme


@dataclass(frozen=True)
class TlsFiles:
    """The PEM contents a TLS export uses: the collector's CA, and a client certificate with
    its key for mutual TLS. None: the system's roots, no client certificate."""

    certificate: bytes | None = field(default=None, repr=False)
    client_key: bytes | None = field(default=None, repr=False)
    client_certificate: bytes | None = field(default=None, repr=False)

    def credentials(self) -> grpc.ChannelCredentials:
        return grpc.ssl_channel_credentials(
            root_certificates=self.certificate,
            private_key=self.client_key,
            certificate_chain=self.client_certificate,
        )


def tls_files(env: Mapping[str, str]) -> TlsFiles:
    """OTEL_EXPORTER_OTLP_[TRACES_]{CERTIFICATE,CLIENT_KEY,CLIENT_CERTIFICATE}, read."""
    files = TlsFiles(
        certificate=_pem(env, "CERTIFICATE"),
        client_key=_pem(env, "CLIENT_KEY"),
        client_certificate=_pem(env, "CLIENT_CERTIFICATE"),
    )
    if (files.client_key is None) != (files.client_certificate is None):
        raise SettingsError(
            f"{signal_name(env, 'CLIENT_KEY')} and {signal_name(env, 'CLIENT_CERTIFICATE')} "
            "go together (a client certificate and its key, for mutual TLS): set both or neither"
        )
    return files


def _pem(env: Mapping[str, str], suffix: str) -> bytes | None:
    path = (signal_value(env, suffix) or "").strip()
    if not path:
        return None
    name = signal_name(env, suffix)
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise SettingsError(f"{name}: cannot read {path} ({exc.strerror or exc})") from None
    if b"-----BEGIN " not in data:  # gRPC would take it and fail every handshake
        raise SettingsError(f"{name}: {path} is not a PEM file (no -----BEGIN line)")
    return data
