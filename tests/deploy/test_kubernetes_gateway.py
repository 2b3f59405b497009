"""The gateway as the overlays render it: probes, resources, hardening, draining, autoscaling on
the Prometheus adapter's metric, disruption budget, and an environment the gateway documents
and accepts."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import orjson
import pytest

from gateway.drain import DrainSettings, stop_bound_s
from gateway.settings import Settings
from obs.metrics import GatewayMetrics
from tests.deploy.support import (
    EXTERNAL_SECRETS,
    KUBERNETES,
    OVERLAYS,
    Doc,
    config_map,
    gateway_container,
    gateway_environment,
    load_all,
    named,
    of_kind,
    pod_labels,
    readme_variables,
    render,
    selects,
)


def _deployment(overlay: str) -> Doc:
    return named(render(overlay), "Deployment", "llm-gateway")


def _hpa(overlay: str) -> Doc:
    return named(render(overlay), "HorizontalPodAutoscaler", "llm-gateway")


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_probes_follow_the_health_routes(overlay: str) -> None:
    """Readiness is /readyz, liveness and startup /healthz, on the container's http port."""
    container = gateway_container(render(overlay))
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    assert container["startupProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    assert {p["name"]: p["containerPort"] for p in container["ports"]} == {"http": 8000}


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_resources_and_read_only_root(overlay: str) -> None:
    """Requests and limits are set; the root is read-only and only emptyDirs are writable."""
    deployment = _deployment(overlay)
    pod = deployment["spec"]["template"]["spec"]
    container = gateway_container(render(overlay))
    resources = container["resources"]
    assert {"cpu", "memory"} <= set(resources["requests"]) and {"cpu", "memory"} <= set(
        resources["limits"]
    )
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert pod["securityContext"]["runAsNonRoot"] is True
    volumes = {v["name"]: v for v in pod["volumes"]}
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    assert "emptyDir" in volumes[mounts["/tmp"]]
    writable = [m for m in container["volumeMounts"] if not m.get("readOnly")]
    assert all("emptyDir" in volumes[m["name"]] for m in writable)


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_shutdown_drains_before_it_stops(overlay: str) -> None:
    """SIGTERM comes at once (no preStop sleep): the gateway's own drain delay comes first,
    and the grace period covers it, the shutdown grace of in-flight requests and the bounded
    closing stages after it (the worst case of a stuck shutdown, `stop_bound_s`)."""
    docs = render(overlay)
    pod = _deployment(overlay)["spec"]["template"]["spec"]
    assert "preStop" not in gateway_container(docs).get("lifecycle", {})
    drain = DrainSettings.from_env({k: str(v) for k, v in gateway_environment(docs).items()})
    assert drain.delay_s >= 5
    assert pod["terminationGracePeriodSeconds"] >= stop_bound_s(drain)


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_replicas_spread_and_survive_disruptions(overlay: str) -> None:
    """At least two replicas, spread over zones and nodes, evicted one at a time."""
    docs = render(overlay)
    deployment = _deployment(overlay)
    labels = pod_labels(deployment)
    assert "replicas" not in deployment["spec"], "the HorizontalPodAutoscaler owns replicas"
    assert _hpa(overlay)["spec"]["minReplicas"] >= 2
    spread = deployment["spec"]["template"]["spec"]["topologySpreadConstraints"]
    assert {c["topologyKey"] for c in spread} == {
        "topology.kubernetes.io/zone",
        "kubernetes.io/hostname",
    }
    assert all(selects(c["labelSelector"]["matchLabels"], labels) for c in spread)
    (budget,) = [
        b
        for b in of_kind(docs, "PodDisruptionBudget")
        if selects(b["spec"]["selector"]["matchLabels"], labels)
    ]
    assert budget["spec"]["maxUnavailable"] == 1
    service = named(docs, "Service", "llm-gateway")
    assert selects(service["spec"]["selector"], labels)
    assert [p["targetPort"] for p in service["spec"]["ports"]] == ["http"]


def _adapter_rule() -> Doc:
    (values,) = load_all(KUBERNETES / "prometheus-adapter" / "values.yaml")
    (rule,) = values["rules"]["custom"]
    rule_: Doc = rule
    return rule_


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_autoscaler_uses_the_adapter_metric_with_cpu_as_fallback(overlay: str) -> None:
    """The HPA scales on the adapter rule's metric (a gateway gauge), then on CPU."""
    spec = _hpa(overlay)["spec"]
    assert spec["scaleTargetRef"] == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": "llm-gateway",
    }
    by_type = {m["type"]: m for m in spec["metrics"]}
    assert set(by_type) == {"Pods", "Resource"}
    assert by_type["Resource"]["resource"]["name"] == "cpu"
    rule = _adapter_rule()
    assert by_type["Pods"]["pods"]["metric"]["name"] == rule["name"]["as"]
    series = rule["seriesQuery"].split("{", 1)[0]
    gauges = {f.name for f in GatewayMetrics().registry.collect() if f.type == "gauge"}
    assert series in gauges
    assert rule["resources"]["overrides"]["pod"] == {"resource": "pod"}


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_limit_replicas_is_the_autoscaler_floor(overlay: str) -> None:
    """GATEWAY_LIMIT_REPLICAS (a replica's share of limits without Redis) is minReplicas."""
    environment = gateway_environment(render(overlay))
    assert environment["GATEWAY_LIMIT_REPLICAS"] == str(_hpa(overlay)["spec"]["minReplicas"])


def _documented_names(environment: dict[str, Any]) -> list[str]:
    documented = readme_variables()
    return sorted(name for name in environment if name not in documented)


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_environment_is_documented(overlay: str) -> None:
    """Every variable the manifests give the gateway has its row in the README's table."""
    environment = gateway_environment(render(overlay))
    assert "GATEWAY_BACKENDS" in environment
    assert _documented_names(environment) == []


def _secret_file(docs: list[Doc], name: str, key: str) -> bytes | None:
    found = [d for d in of_kind(docs, "Secret") if d["metadata"]["name"] == name]
    return base64.b64decode(found[0]["data"][key]) if found else None


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_environment_is_accepted_by_the_gateway(overlay: str, tmp_path: Path) -> None:
    """The variables, as the pod sees them, pass the gateway's own startup validation."""
    docs = render(overlay)
    environment = gateway_environment(docs)
    keys_file = Path(str(environment["GATEWAY_API_KEYS_FILE"]))
    volume = next(
        v
        for v in named(docs, "Deployment", "llm-gateway")["spec"]["template"]["spec"]["volumes"]
        if "secret" in v
    )
    key_set = _secret_file(docs, volume["secret"]["secretName"], keys_file.name)
    if key_set is None:  # created outside Kustomize: any valid key set stands in
        key_set = orjson.dumps({"keys": [{"sha256": "0" * 64, "tenant": "example"}]})
    (tmp_path / keys_file.name).write_bytes(key_set)
    env = {
        name: value if isinstance(value, str) else "redis://redis.example:6379/0"
        for name, value in environment.items()
    }
    env["GATEWAY_API_KEYS_FILE"] = str(tmp_path / keys_file.name)
    settings = Settings.from_env(env)
    assert settings.backends.models


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_references_resolve(overlay: str) -> None:
    """Every ConfigMap and Secret a pod names is rendered, or is one the operator creates."""
    docs = render(overlay)
    rendered = {(d["kind"], d["metadata"]["name"]) for d in docs}
    missing = set()
    for workload in of_kind(docs, "Deployment", "StatefulSet"):
        pod = workload["spec"]["template"]["spec"]
        for container in pod["containers"]:
            for source in container.get("envFrom", []):
                config_map(docs, source["configMapRef"]["name"])
            for variable in container.get("env", []):
                ref = variable.get("valueFrom", {}).get("secretKeyRef")
                if ref and ("Secret", ref["name"]) not in rendered:
                    missing.add(ref["name"])
        for volume in pod.get("volumes", []):
            name = volume.get("secret", {}).get("secretName")
            if name and ("Secret", name) not in rendered:
                missing.add(name)
    assert missing <= EXTERNAL_SECRETS[overlay]
    readme = (KUBERNETES.parents[1] / "README.md").read_text(encoding="utf-8")
    assert [name for name in sorted(missing) if f"`{name}`" not in readme] == []
