"""SimServer: start on a free port, address, graceful stop."""

from __future__ import annotations

import asyncio

import grpc
import pytest
from smg_grpc_proto.generated import vllm_engine_pb2_grpc as pb_grpc

from standin.vllm.config import SimConfig
from standin.vllm.served_model import expected_generation
from standin.vllm.server import SimServer
from tests.standin.vllm.conftest import StartSim
from tests.standin.vllm.helpers import collect, generate_request, read_all


async def test_start_picks_a_free_port() -> None:
    """Port 0 binds a free port; the address is loopback."""
    server = SimServer(SimConfig(port=0))
    port = await server.start()
    try:
        assert port > 0
        assert server.address == f"127.0.0.1:{port}"
    finally:
        await server.stop(grace=0)


async def test_wildcard_bind_gives_a_loopback_address() -> None:
    """Bound to 0.0.0.0, the address to connect to is 127.0.0.1."""
    server = SimServer(SimConfig(host="0.0.0.0", port=0))
    port = await server.start()
    try:
        assert server.address == f"127.0.0.1:{port}"
    finally:
        await server.stop(grace=0)


async def test_busy_port_fails_to_start(sim: SimServer) -> None:
    """A port another server holds is refused."""
    with pytest.raises(OSError, match="cannot bind"):
        await SimServer(SimConfig(port=sim.port)).start()


async def test_stop_lets_in_flight_streams_finish(start_sim: StartSim) -> None:
    """During the grace period a running stream completes normally."""
    server = await start_sim(itl_ms=20)
    async with grpc.aio.insecure_channel(server.address) as channel:
        stub = pb_grpc.VllmEngineStub(channel)
        call = stub.Generate(generate_request(), timeout=60)
        first = await call.read()
        stopping = asyncio.create_task(server.stop(grace=60))
        rest = await read_all(call)
        await stopping
        streamed = [*first.chunk.token_ids]
        streamed += [t for m in rest if m.HasField("chunk") for t in m.chunk.token_ids]
        assert streamed == list(expected_generation("hello world").token_ids)
        assert rest[-1].complete.finish_reason == "stop"
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await collect(stub, generate_request(), timeout=5)
        assert caught.value.code() == grpc.StatusCode.UNAVAILABLE
