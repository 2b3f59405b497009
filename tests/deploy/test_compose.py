"""deploy/compose.yaml: the gateway, Redis Stack and two vLLM stand-ins by default, vLLM on a
GPU only in the `gpu` profile, pinned images, and the gateway pointed at what it starts."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

from gateway.drain import DrainSettings, stop_bound_s
from tests.deploy.support import DEPLOY, load_all, readme_variables

GATEWAY_IMAGE = "llm-gateway:0.1.0"


def _compose() -> dict[str, Any]:
    (compose,) = load_all(DEPLOY / "compose.yaml")
    loaded: dict[str, Any] = compose
    return loaded


def _seconds(duration: str) -> float:
    """A compose duration (`1m30s`, `45s`, `500ms`) in seconds."""
    units = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001, "us": 1e-6}
    parts = re.findall(r"(\d+(?:\.\d+)?)(h|ms|us|m|s)", duration)
    assert parts and "".join(n + u for n, u in parts) == duration, duration
    return sum(float(n) * units[u] for n, u in parts)


def _default(value: str) -> str:
    """`${VAR:-default}` -> default (compose interpolation); anything else unchanged."""
    match = re.fullmatch(r"\$\{\w+:-(.*)\}", value)
    return match.group(1) if match else value


def test_services_and_profiles() -> None:
    """Everything but vLLM starts by default; vLLM is the `gpu` profile's, with a GPU reserved."""
    services = _compose()["services"]
    assert set(services) == {"gateway", "redis", "sim-a", "sim-b", "vllm"}
    assert [name for name, s in services.items() if "profiles" in s] == ["vllm"]
    vllm = services["vllm"]
    assert vllm["profiles"] == ["gpu"]
    (device,) = vllm["deploy"]["resources"]["reservations"]["devices"]
    assert device["driver"] == "nvidia" and "gpu" in device["capabilities"]
    assert "--grpc" in vllm["command"] and "--port=50051" in vllm["command"]


def test_vllm_runs_vllm_serve_once() -> None:
    """`command:` replaces only the image's CMD: the entrypoint is set, and the command does not
    repeat it (vLLM's image starts with `vllm serve`, which would run `vllm serve vllm serve`)."""
    vllm = _compose()["services"]["vllm"]
    assert vllm["entrypoint"] == ["vllm", "serve"]
    assert not vllm["command"][0].startswith("-") and vllm["command"][0] != "vllm"


def test_images_are_pinned() -> None:
    """Every image names a version; none is :latest."""
    for name, service in _compose()["services"].items():
        image = service["image"]
        assert ":" in image and not image.endswith(":latest"), name
    assert _compose()["services"]["redis"]["image"].startswith("redis/redis-stack-server:")


def test_gateway_reaches_what_compose_starts() -> None:
    """The gateway's backends, Redis and dependencies are the services compose starts."""
    services = _compose()["services"]
    gateway = services["gateway"]
    environment = {k: _default(str(v)) for k, v in gateway["environment"].items()}
    (model,) = environment["GATEWAY_BACKENDS"].split(";")
    hosts = [urlsplit(url) for url in model.split("=", 1)[1].split(",")]
    assert sorted(str(url.hostname) for url in hosts) == ["sim-a", "sim-b"]
    for url in hosts:
        command = services[str(url.hostname)]["command"]
        assert command[command.index("--port") + 1] == str(url.port)
    assert urlsplit(environment["GATEWAY_REDIS_URL"]).hostname == "redis"
    assert {name: d["condition"] for name, d in gateway["depends_on"].items()} == {
        "redis": "service_healthy",
        "sim-a": "service_healthy",
        "sim-b": "service_healthy",
    }
    assert [name for name in environment if name not in readme_variables()] == []


def test_standins_bring_their_own_health_check() -> None:
    """The image's HEALTHCHECK is the gateway's: a stand-in from the same image overrides it."""
    services = _compose()["services"]
    for name in ("sim-a", "sim-b"):
        assert services[name]["image"] == GATEWAY_IMAGE
        assert services[name]["entrypoint"] == ["python", "-m", "standin.vllm"]
        assert "50051" in " ".join(services[name]["healthcheck"]["test"])


def test_gateway_runs_read_only() -> None:
    """As in Kubernetes: a read-only root with a tmpfs on /tmp."""
    for name in ("gateway", "sim-a", "sim-b"):
        service = _compose()["services"][name]
        assert service["read_only"] is True and service["tmpfs"] == ["/tmp"], name


def test_stop_waits_for_the_gateway_to_drain() -> None:
    """`compose stop` gives the gateway its drain delay, shutdown grace and the bounded
    closing stages after it (the worst case of a stuck shutdown)."""
    gateway = _compose()["services"]["gateway"]
    drain = DrainSettings.from_env({k: _default(str(v)) for k, v in gateway["environment"].items()})
    assert _seconds(gateway["stop_grace_period"]) >= stop_bound_s(drain)
