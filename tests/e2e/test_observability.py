"""Traces, metrics and logs of a real gateway process (two workers) in front of a stand-in."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import grpc
import orjson
import pytest
from prometheus_client.parser import text_string_to_metric_families

from standin.vllm.control import ControlClient
from tests.e2e.stack import Stack, running_stack
from tests.support.otlp_receiver import OtlpReceiver, otlp_receiver

CLIENT_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CLIENT_SPAN = "00f067aa0ba902b7"
SERVER_SPAN = "POST /v1/chat/completions"
SPAN_KIND_SERVER, SPAN_KIND_CLIENT = 2, 3


@pytest.fixture(scope="module")
def receiver() -> Iterator[OtlpReceiver]:
    with otlp_receiver() as running:
        yield running


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory, receiver: OtlpReceiver) -> Iterator[Stack]:
    env = {
        "GATEWAY_WORKERS": "2",
        "GATEWAY_LOG_LEVEL": "info",
        "GATEWAY_CACHE": "off",
        "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
        "OTEL_TRACES_SAMPLER": "always_on",
        "OTEL_BSP_SCHEDULE_DELAY": "100",
        "OTEL_SERVICE_NAME": "gateway-under-test",
    }
    with running_stack(
        tmp_path_factory.mktemp("observability"), sims=1, mock=False, env=env
    ) as running:
        yield running


async def _chat(url: str, text: str, headers: dict[str, str] | None = None) -> str:
    payload = {"model": "sim", "messages": [{"role": "user", "content": text}]}
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"{url}/chat/completions", json=payload, headers=headers) as response,
    ):
        await response.read()
        assert response.status == 200
        return response.headers["x-request-id"]


async def test_client_trace_reaches_collector_and_stand_in(
    stack: Stack, receiver: OtlpReceiver
) -> None:
    """The client's trace context becomes the parent of the gateway's spans, which arrive at
    the OTLP receiver; the stand-in receives the same trace with the gateway's span as parent."""
    traceparent = f"00-{CLIENT_TRACE}-{CLIENT_SPAN}-01"
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{stack.sim_ports[0]}")
    try:
        await _chat(stack.api_url, "traced question", {"traceparent": traceparent})
        stats = await ControlClient(channel).stats()
    finally:
        await channel.close(grace=None)
    spans = await asyncio.to_thread(receiver.wait_for, 1, name=SERVER_SPAN)
    server = next(s for s in spans if s.name == SERVER_SPAN and s.trace_id == CLIENT_TRACE)
    assert server.parent_span_id == CLIENT_SPAN and server.kind == SPAN_KIND_SERVER
    assert server.resource["service.name"] == "gateway-under-test"
    sent = stats["last_metadata"]["traceparent"]
    assert sent == f"00-{CLIENT_TRACE}-{server.span_id}-01"
    spans = await asyncio.to_thread(receiver.wait_for, 4)  # the server span and its 3 children
    children = [s for s in spans if s.parent_span_id == server.span_id]
    names = {child.name for child in children}
    assert {"gateway.parse", "gateway.admission", "chat sim"} <= names
    backend = next(child for child in children if child.name == "chat sim")
    assert backend.kind == SPAN_KIND_CLIENT
    assert backend.attributes["gen_ai.request.model"] == "sim"
    assert int(str(backend.attributes["gen_ai.usage.output_tokens"])) > 0
    assert all("traced question" not in str(s.attributes) for s in [*children, server])


async def test_metrics_count_every_request_across_workers(stack: Stack) -> None:
    """With two workers, /metrics adds up what both served, whichever answers the scrape."""

    async def counted(session: aiohttp.ClientSession) -> tuple[float, str]:
        async with session.get(f"{stack.base_url}/metrics") as response:
            text = await response.text()
        route = "/v1/chat/completions"
        return _sample_sum(text, "gateway_request_duration_seconds_count", route=route), text

    async with aiohttp.ClientSession() as session:
        before, _ = await counted(session)  # what earlier tests sent (all answered by now)
        await asyncio.gather(*(_chat(stack.api_url, f"counted {i}") for i in range(20)))
        async with asyncio.timeout(30):
            while (now := await counted(session))[0] < before + 20:
                pass
    total, text = now
    # At most one more: the test before's request, if its record landed after `before` was read.
    assert before + 20 <= total <= before + 21
    assert _sample_sum(text, "gateway_replica_healthy") >= 1


def _sample_sum(text: str, name: str, **labels: str) -> float:
    """The sum of `name`'s samples carrying `labels` (the scrapes themselves are counted too)."""
    return sum(
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == name and labels.items() <= sample.labels.items()
    )


async def test_one_json_log_line_per_request(stack: Stack) -> None:
    """Every request leaves one JSON line with its request id, trace id and stages."""
    request_id = await _chat(stack.api_url, "logged question")
    lines = await asyncio.to_thread(_log_lines, Path(stack.gateway.log_path), request_id)
    (line,) = lines
    assert line["message"] == "request" and line["status"] == 200
    assert len(line["trace_id"]) == 32 and line["model"] == "sim"
    assert {"parse", "admission", "backend"} <= set(line["stages"])


def _log_lines(path: Path, request_id: str) -> list[dict[str, Any]]:
    """The JSON lines naming `request_id`, once there is one (written after the last byte)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        text = path.read_bytes()
        lines = [
            orjson.loads(line)
            for line in text.splitlines()
            if line.startswith(b"{") and request_id.encode() in line
        ]
        if lines:
            assert b"logged question" not in text
            return lines
        time.sleep(0.05)
    raise AssertionError(f"no log line for {request_id} in {path}")


async def test_a_stream_cut_after_its_first_byte_is_counted_as_an_error(stack: Stack) -> None:
    """A stream the engine breaks mid-way keeps its 200 status; the error counter names it."""
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{stack.sim_ports[0]}")
    sim = ControlClient(channel)
    payload = {
        "model": "sim",
        "messages": [{"role": "user", "content": "a stream cut short"}],
        "stream": True,
    }
    try:
        await sim.configure(die_after_tokens=2)
        async with (
            aiohttp.ClientSession() as session,
            session.post(f"{stack.api_url}/chat/completions", json=payload) as response,
        ):
            assert response.status == 200
            assert b'"error"' in await response.read()
            async with asyncio.timeout(30):
                while True:
                    async with session.get(f"{stack.base_url}/metrics") as scraped:
                        text = await scraped.text()
                    if _sample_sum(text, "gateway_stream_errors_total"):
                        break
    finally:
        await sim.reset()
        await channel.close(grace=None)
    errors = [
        sample.labels
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "gateway_stream_errors_total"
    ]
    assert errors == [{"route": "/v1/chat/completions", "model": "sim", "code": "backend_error"}]
