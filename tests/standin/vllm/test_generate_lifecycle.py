"""Generate lifecycle over gRPC: Abort, cancellation, admission limits and injected faults."""

from __future__ import annotations

from typing import Any

import grpc
import pytest
from smg_grpc_proto.generated import vllm_engine_pb2 as pb
from smg_grpc_proto.generated import vllm_engine_pb2_grpc as pb_grpc

from standin.vllm.faults import draw
from standin.vllm.served_model import expected_generation
from standin.vllm.server import SimServer
from tests.standin.vllm.conftest import StartSim
from tests.standin.vllm.helpers import collect, generate_request, read_all, wait_until

SLOW = 600_000.0  # ms between tokens: the stream stays open until the test acts


async def connect(server: SimServer) -> tuple[grpc.aio.Channel, Any]:
    channel = grpc.aio.insecure_channel(server.address)
    return channel, pb_grpc.VllmEngineStub(channel)


async def test_abort_rpc_ends_a_running_stream_with_abort(start_sim: StartSim) -> None:
    """Abort on a streaming request sends an empty chunk and a complete with "abort"."""
    server = await start_sim(itl_ms=SLOW)
    channel, stub = await connect(server)
    async with channel:
        call = stub.Generate(generate_request(request_id="slow"), timeout=60)
        first = await call.read()
        assert len(first.chunk.token_ids) == 1
        await stub.Abort(pb.AbortRequest(request_ids=["slow"]), timeout=10)
        rest = await read_all(call)
        assert await call.code() == grpc.StatusCode.OK
    assert [m.WhichOneof("response") for m in rest] == ["chunk", "complete"]
    assert list(rest[0].chunk.token_ids) == []
    assert rest[1].complete.finish_reason == "abort"
    assert list(rest[1].complete.output_ids) == []
    stats = server.stats()
    assert stats["aborted_request_ids"] == ["slow"]
    assert stats["aborted"] == 1
    assert stats["running"] == 0


async def test_abort_of_non_streaming_request_returns_tokens_so_far(start_sim: StartSim) -> None:
    """A non-streaming request aborted mid-way completes with "abort"."""
    server = await start_sim(itl_ms=SLOW)
    channel, stub = await connect(server)
    async with channel:
        call = stub.Generate(generate_request(request_id="unary", stream=False), timeout=60)
        await wait_until(lambda: server.stats()["running"] == 1)
        await stub.Abort(pb.AbortRequest(request_ids=["unary"]), timeout=10)
        messages = await read_all(call)
    (message,) = messages
    assert message.complete.finish_reason == "abort"
    expected = expected_generation("hello world").token_ids
    assert list(message.complete.output_ids) == list(expected[: len(message.complete.output_ids)])


async def test_cancelled_call_is_recorded(start_sim: StartSim) -> None:
    """Cancelling the RPC stops the request and records its id."""
    server = await start_sim(itl_ms=SLOW)
    channel, stub = await connect(server)
    async with channel:
        call = stub.Generate(generate_request(request_id="gone"), timeout=60)
        await call.read()
        call.cancel()
        await wait_until(lambda: "gone" in server.stats()["cancelled_request_ids"])
    await wait_until(lambda: server.stats()["running"] == 0)
    assert server.stats()["cancelled"] == 1


async def test_queue_full_is_resource_exhausted(start_sim: StartSim) -> None:
    """With every slot busy and no queue, a new call gets RESOURCE_EXHAUSTED."""
    server = await start_sim(itl_ms=SLOW, max_concurrency=1, max_waiting=0)
    channel, stub = await connect(server)
    async with channel:
        holder = stub.Generate(generate_request(request_id="a"), timeout=60)
        await holder.read()
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await collect(stub, generate_request(request_id="b"))
        assert caught.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        holder.cancel()
    assert server.stats()["rejected"] == 1


async def test_waiting_request_runs_when_a_slot_frees(start_sim: StartSim) -> None:
    """A queued call waits for the slot, a call beyond the queue is refused, order holds."""
    server = await start_sim(max_concurrency=1, max_waiting=1, hang_rate=1.0)
    channel, stub = await connect(server)
    async with channel:
        holder = stub.Generate(generate_request(request_id="a"), timeout=60)
        await wait_until(lambda: server.stats()["running"] == 1)
        server.configure(hang_rate=0.0)
        queued = stub.Generate(generate_request(request_id="b"), timeout=60)
        await wait_until(lambda: server.stats()["waiting"] == 1)
        loads = await stub.GetLoads(pb.GetLoadsRequest(), timeout=10)
        assert (loads.loads[0].num_running_reqs, loads.loads[0].num_waiting_reqs) == (1, 1)
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await collect(stub, generate_request(request_id="c"))
        assert caught.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        await stub.Abort(pb.AbortRequest(request_ids=["a"]), timeout=10)
        held = await read_all(holder)
        done = await read_all(queued)
    assert held[-1].complete.finish_reason == "abort"
    streamed = [t for m in done if m.HasField("chunk") for t in m.chunk.token_ids]
    assert streamed == list(expected_generation("hello world").token_ids)


async def test_abort_while_waiting_completes_with_abort(start_sim: StartSim) -> None:
    """A request aborted in the queue ends with "abort" and no tokens."""
    server = await start_sim(itl_ms=SLOW, max_concurrency=1, max_waiting=4)
    channel, stub = await connect(server)
    async with channel:
        holder = stub.Generate(generate_request(request_id="a"), timeout=60)
        await holder.read()
        queued = stub.Generate(generate_request(request_id="b"), timeout=60)
        await wait_until(lambda: server.stats()["waiting"] == 1)
        await stub.Abort(pb.AbortRequest(request_ids=["b"]), timeout=10)
        messages = await read_all(queued)
        holder.cancel()
    assert messages[-1].complete.finish_reason == "abort"
    assert server.stats()["waiting"] == 0


async def test_error_rate_one_fails_with_internal(start_sim: StartSim) -> None:
    """error_rate=1.0 fails every call with INTERNAL before any token."""
    server = await start_sim(error_rate=1.0)
    channel, stub = await connect(server)
    async with channel:
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await collect(stub, generate_request())
    assert caught.value.code() == grpc.StatusCode.INTERNAL
    assert server.stats()["injected_errors"] == 1


async def test_error_pattern_follows_the_fault_seed(start_sim: StartSim) -> None:
    """Which calls fail is decided by the fault seed and the call number."""
    server = await start_sim(error_rate=0.5, fault_seed=3)
    channel, stub = await connect(server)
    failed = []
    async with channel:
        for _ in range(12):
            try:
                await collect(stub, generate_request(max_tokens=1))
                failed.append(False)
            except grpc.aio.AioRpcError:
                failed.append(True)
    assert failed == [draw(3, number, "error") < 0.5 for number in range(12)]


@pytest.mark.parametrize("code", ["INTERNAL", "UNAVAILABLE"])
async def test_die_after_tokens_breaks_the_stream(start_sim: StartSim, code: str) -> None:
    """die_after_tokens=3 sends three tokens, then fails the stream with die_code."""
    server = await start_sim(die_after_tokens=3, die_code=code)
    channel, stub = await connect(server)
    received: list[int] = []

    async def drain() -> None:
        async for message in stub.Generate(generate_request(), timeout=30):
            received.extend(message.chunk.token_ids)

    async with channel:
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await drain()
    assert caught.value.code() == grpc.StatusCode[code]
    assert received == list(expected_generation("hello world").token_ids[:3])
    assert server.stats()["died"] == 1


async def test_hang_produces_nothing_until_aborted(start_sim: StartSim) -> None:
    """A hanging call sends nothing; Abort ends it with "abort" and no tokens."""
    server = await start_sim(hang_rate=1.0)
    channel, stub = await connect(server)
    async with channel:
        call = stub.Generate(generate_request(request_id="stuck"), timeout=60)
        await wait_until(lambda: server.stats()["injected_hangs"] == 1)
        await stub.Abort(pb.AbortRequest(request_ids=["stuck"]), timeout=10)
        messages = await read_all(call)
    assert [m.WhichOneof("response") for m in messages] == ["chunk", "complete"]
    assert list(messages[0].chunk.token_ids) == []
    assert messages[1].complete.finish_reason == "abort"
