"""An OTLP/gRPC trace sink: the TraceService `Export` call over real gRPC, shared by the
tests' receiver (tests/support/otlp_receiver.py, which decodes every span) and by
`python -m bench --scenario tracing`, which runs it as its own process (`python -m
bench.servers.otlp_sink --servers N`, a bench.harness.worker child) that only counts what
arrives on each port and discards it.

The sink binds its own ports (port 0: the kernel picks) and reports them: a port chosen by the
parent and bound later could be handed out twice, and gRPC servers share a port by default
(SO_REUSEPORT), so two modes would have silently counted into one.

The counting sink keeps each span's start time, so the bench can ask, after the gateway has
flushed, how many spans (and root spans: sampled requests) started inside each measured phase.
"""

from __future__ import annotations

import argparse
import bisect
import sys
import threading
from array import array
from collections.abc import Callable, Iterable, Mapping
from concurrent import futures
from dataclasses import dataclass
from typing import Any

import grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc

from bench.harness.probes import HOST

ExportRequest = trace_service_pb2.ExportTraceServiceRequest
# Called on a gRPC server thread for every Export call.
ExportHandler = Callable[[ExportRequest, grpc.ServicerContext], None]


class _Servicer(trace_service_pb2_grpc.TraceServiceServicer):
    def __init__(self, handler: ExportHandler) -> None:
        self._handler = handler

    def Export(
        self, request: ExportRequest, context: grpc.ServicerContext
    ) -> trace_service_pb2.ExportTraceServiceResponse:
        self._handler(request, context)
        return trace_service_pb2.ExportTraceServiceResponse()


def trace_server(
    handler: ExportHandler, port: int = 0, workers: int = 2
) -> tuple[grpc.Server, int]:
    """A TraceService server on 127.0.0.1:`port` (0: a free one), not started yet; its port.
    It never shares its port with another server."""
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=workers), options=[("grpc.so_reuseport", 0)]
    )
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(  # type: ignore[no-untyped-call]
        _Servicer(handler), server
    )
    try:
        bound = server.add_insecure_port(f"{HOST}:{port}")
    except RuntimeError:  # grpcio's way of saying the port is taken
        bound = 0
    if bound == 0:
        raise OSError(f"could not bind the OTLP sink to {HOST}:{port}")
    return server, bound


@dataclass(frozen=True, slots=True)
class SpanCount:
    """Spans, and root spans (one per sampled request: no parent), in some set."""

    spans: int = 0
    traces: int = 0

    def to_json(self) -> dict[str, int]:
        return {"spans": self.spans, "traces": self.traces}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SpanCount:
        return cls(int(data.get("spans", 0)), int(data.get("traces", 0)))


@dataclass(frozen=True, slots=True)
class SinkTotals:
    """Everything the sink received: spans, Export calls and their serialized bytes."""

    count: SpanCount
    exports: int
    bytes: int

    def to_json(self) -> dict[str, int]:
        return {**self.count.to_json(), "exports": self.exports, "bytes": self.bytes}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SinkTotals:
        return cls(SpanCount.from_json(data), int(data["exports"]), int(data["bytes"]))


class SpanCounter:
    """Counts exported spans by start time (nanoseconds since the epoch); keeps nothing else."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._starts = array("q")
        self._roots = array("q")
        self._exports = 0
        self._bytes = 0

    def add(self, request: ExportRequest, context: grpc.ServicerContext | None = None) -> None:
        starts = array("q")
        roots = array("q")
        for resource_spans in request.resource_spans:
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    start = span.start_time_unix_nano
                    starts.append(start)
                    if not span.parent_span_id:
                        roots.append(start)
        size = request.ByteSize()
        with self._lock:
            self._starts.extend(starts)
            self._roots.extend(roots)
            self._exports += 1
            self._bytes += size

    def totals(self) -> SinkTotals:
        with self._lock:
            count = SpanCount(len(self._starts), len(self._roots))
            return SinkTotals(count, self._exports, self._bytes)

    def windows(self, windows: Iterable[tuple[int, int]]) -> list[SpanCount]:
        """Per [start, end) window: the spans and root spans that started inside it."""
        with self._lock:
            starts = sorted(self._starts)
            roots = sorted(self._roots)
        return [
            SpanCount(_within(starts, low, high), _within(roots, low, high))
            for low, high in windows
        ]


def _within(ordered: list[int], low: int, high: int) -> int:
    return bisect.bisect_left(ordered, high) - bisect.bisect_left(ordered, low)


def handle(counters: Mapping[int, SpanCounter], spec: dict[str, Any]) -> dict[str, Any]:
    """One request of the worker protocol: `ports` (the bound ones, in order), or about the
    sink on `port`: `totals`, or `windows` ([[start_ns, end_ns], ...])."""
    op = spec.get("op")
    if op == "ports":
        return {"ports": list(counters)}
    counter = counters[int(spec["port"])]
    if op == "totals":
        return counter.totals().to_json()
    if op == "windows":
        windows = [(int(low), int(high)) for low, high in spec["windows"]]
        return {"windows": [c.to_json() for c in counter.windows(windows)]}
    raise ValueError(f"unknown op {op!r}")


def main(argv: list[str] | None = None) -> int:
    from bench.harness import worker

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--servers", type=int, required=True, help="how many ports to serve")
    parser.add_argument("--workers", type=int, default=2, help="gRPC server threads per port")
    args = parser.parse_args(argv)
    counters: dict[int, SpanCounter] = {}
    servers: list[grpc.Server] = []
    try:
        for _ in range(args.servers):  # one server per port: each port counts on its own
            counter = SpanCounter()
            server, port = trace_server(counter.add, 0, args.workers)
            counters[port] = counter
            server.start()
            servers.append(server)

        async def answer(spec: dict[str, Any]) -> dict[str, Any]:
            return handle(counters, spec)

        return worker.serve(answer)  # answers the first ping once every server is up
    finally:
        for server in servers:
            server.stop(grace=None)


if __name__ == "__main__":
    sys.exit(main())
