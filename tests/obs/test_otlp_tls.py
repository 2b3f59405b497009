"""obs/otlp_tls.py: the OTLP endpoint and TLS files are checked and read at startup."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.env import SettingsError
from obs.tracing_config import tracing_config

PEM = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
TLS = {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_ENDPOINT": "https://collector:4317"}


@pytest.mark.parametrize(
    "suffix", ["CERTIFICATE", "CLIENT_KEY", "CLIENT_CERTIFICATE", "TRACES_CERTIFICATE"]
)
def test_a_missing_tls_file_names_its_variable(suffix: str, tmp_path: Path) -> None:
    """A TLS file that does not exist stops startup naming its variable, not a worker."""
    pem = tmp_path / "ok.pem"
    pem.write_bytes(PEM)
    pair = {
        "OTEL_EXPORTER_OTLP_CLIENT_KEY": str(pem),
        "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE": str(pem),
    }
    variable = f"OTEL_EXPORTER_OTLP_{suffix}"
    env = {**TLS, **pair, variable: "/nonexistent.pem"}
    with pytest.raises(SettingsError, match=f"{variable}: cannot read /nonexistent.pem"):
        tracing_config(env)


def test_tls_files_are_read_once_at_startup(tmp_path: Path) -> None:
    """The PEM contents travel in the configuration; the exporter reads no file later."""
    ca, key, cert = (tmp_path / n for n in ("ca.pem", "key.pem", "cert.pem"))
    for path in (ca, key, cert):
        path.write_bytes(PEM + path.name.encode())
    config = tracing_config(
        {
            **TLS,
            "OTEL_EXPORTER_OTLP_CERTIFICATE": str(ca),
            "OTEL_EXPORTER_OTLP_CLIENT_KEY": str(key),
            "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE": str(cert),
        }
    )
    assert config is not None and config.otlp is not None
    tls = config.otlp.tls
    assert (tls.certificate, tls.client_key, tls.client_certificate) == (
        PEM + b"ca.pem",
        PEM + b"key.pem",
        PEM + b"cert.pem",
    )
    assert "BEGIN" not in repr(config.otlp)
    tls.credentials()


def test_plaintext_export_reads_no_tls_file() -> None:
    """With http:// (plaintext) the TLS files are unused, so they are not read."""
    env = {**TLS, "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4317"}
    config = tracing_config({**env, "OTEL_EXPORTER_OTLP_CERTIFICATE": "/nonexistent.pem"})
    assert config is not None and config.otlp is not None and config.otlp.insecure


def test_a_file_that_is_not_pem_is_refused(tmp_path: Path) -> None:
    """A certificate file without a PEM block would fail every handshake: refused at startup."""
    der = tmp_path / "ca.der"
    der.write_bytes(b"\x30\x82\x01")
    with pytest.raises(SettingsError, match=r"OTEL_EXPORTER_OTLP_CERTIFICATE: .* is not a PEM"):
        tracing_config({**TLS, "OTEL_EXPORTER_OTLP_CERTIFICATE": str(der)})


def test_a_client_key_needs_its_certificate(tmp_path: Path) -> None:
    """A client key without a client certificate (or the reverse) names both variables."""
    pem = tmp_path / "key.pem"
    pem.write_bytes(PEM)
    with pytest.raises(SettingsError) as info:
        tracing_config({**TLS, "OTEL_EXPORTER_OTLP_CLIENT_KEY": str(pem)})
    assert "OTEL_EXPORTER_OTLP_CLIENT_KEY and OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE" in str(
        info.value
    )


@pytest.mark.parametrize(
    "endpoint", ["http://[::1", "https://[::1:4317", "http://collector:abc", "http://:4317"]
)
def test_a_malformed_endpoint_names_its_variable(endpoint: str) -> None:
    """A malformed OTLP endpoint (an unclosed IPv6 bracket, a bad port, no host) is a
    SettingsError naming the variable, not a ValueError's traceback or a silent export."""
    for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        with pytest.raises(SettingsError, match=name):
            tracing_config({"OTEL_TRACES_EXPORTER": "otlp", name: endpoint})


def test_well_formed_endpoints_pass() -> None:
    """IPv6 literals and a bare host:port (the exporter's own form) are accepted."""
    for endpoint in ("http://[::1]:4317", "https://collector", "collector:4317"):
        config = tracing_config(
            {"OTEL_TRACES_EXPORTER": "otlp", **{"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint}}
        )
        assert config is not None and config.otlp is not None
        assert config.otlp.endpoint == endpoint
