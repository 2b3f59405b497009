from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from obs.metrics import GatewayMetrics
from obs.multiproc import ENV_VAR

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
DASHBOARD = DEPLOY / "grafana" / "llm-gateway-dashboard.json"
METRIC_NAME = re.compile(r"\bgateway_[a-z0-9_]+\b")
SUFFIXES = {"histogram": ("_bucket", "_count", "_sum"), "counter": ("_total",), "gauge": ("",)}


@pytest.fixture(autouse=True)
def _single_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_VAR, raising=False)


def dashboard() -> dict[str, Any]:
    loaded: dict[str, Any] = orjson.loads(DASHBOARD.read_bytes())
    return loaded


def panels(board: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for panel in board["panels"]:
        yield panel
        yield from panel.get("panels", [])


def expressions(board: dict[str, Any]) -> list[str]:
    exprs = [t["expr"] for p in panels(board) for t in p.get("targets", [])]
    exprs += [v["definition"] for v in board["templating"]["list"] if "definition" in v]
    return exprs


def exposed() -> dict[str, set[str]]:
    """Each metric family GatewayMetrics registers, with the sample names it exposes."""
    families: dict[str, set[str]] = {}
    for family in GatewayMetrics().registry.collect():
        families[family.name] = {family.name + suffix for suffix in SUFFIXES[family.type]}
    return families


def test_dashboard_uses_only_exposed_metrics() -> None:
    """Every metric named in a panel or variable query is one that GatewayMetrics exposes."""
    families = exposed()
    samples = set().union(*families.values())
    used = {name for expr in expressions(dashboard()) for name in METRIC_NAME.findall(expr)}
    assert used, "no gateway_* metric found in the dashboard"
    assert used <= samples, f"unknown metrics: {sorted(used - samples)}"


def test_dashboard_shows_every_metric() -> None:
    """No GatewayMetrics family is left off the dashboard."""
    used = {name for expr in expressions(dashboard()) for name in METRIC_NAME.findall(expr)}
    missing = [family for family, names in exposed().items() if not names & used]
    assert missing == []


def test_dashboard_structure() -> None:
    """Valid Grafana model: schema version, a Prometheus datasource variable, unique ids."""
    board = dashboard()
    assert board["schemaVersion"] >= 39
    assert board["uid"] == "llm-gateway"
    variables = {v["name"]: v for v in board["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    ids = [p["id"] for p in panels(board)]
    assert len(ids) == len(set(ids))
    for panel in panels(board):
        assert set(panel["gridPos"]) == {"h", "w", "x", "y"}
        assert panel["gridPos"]["x"] + panel["gridPos"]["w"] <= 24
        if panel["type"] != "row":
            assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
            assert panel["targets"], panel["title"]
            assert len({t["refId"] for t in panel["targets"]}) == len(panel["targets"])
    titles = " ".join(p["title"].lower() for p in panels(board))
    for topic in ("stage", "first token", "hit rate", "shed", "in-flight", "queued", "circuit"):
        assert topic in titles


def test_collector_config_pipeline() -> None:
    """The collector example receives OTLP on 4317/4318 and exports through a traces pipeline."""
    yaml = pytest.importorskip("yaml")
    config = yaml.safe_load((DEPLOY / "otel-collector.yaml").read_text())
    protocols = config["receivers"]["otlp"]["protocols"]
    assert protocols["grpc"]["endpoint"].endswith(":4317")
    assert protocols["http"]["endpoint"].endswith(":4318")
    traces = config["service"]["pipelines"]["traces"]
    assert traces["receivers"] == ["otlp"]
    assert traces["processors"] == ["memory_limiter", "batch"]
    assert "debug" in traces["exporters"]
    for component in traces["exporters"]:
        assert component in config["exporters"]
    for component in traces["processors"]:
        assert component in config["processors"]
