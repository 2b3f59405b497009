"""The gRPC transport's own floor: a bare `grpc.aio` client loop calling the stand-in's
`Generate` directly with what the gateway would send (same ids, same sampling parameters).

Closed loop like `bench.loadgen`; time to first token is the time to the first `chunk`
message. Runs as a worker process (`python -m bench.grpc_floor`), pinned by the caller to
the core the gateway gets, so the two are compared on equal CPU.
"""

from __future__ import annotations

import asyncio
import itertools
import sys
import time
from pathlib import Path
from typing import Any

import grpc
from smg_grpc_proto.generated import vllm_engine_pb2, vllm_engine_pb2_grpc

from bench import worker
from bench.closed_loop import drive
from bench.payloads import SAMPLING_DEFAULTS
from bench.specs import GrpcPhase
from bench.stats import Recorder

# The gateway's channel options (backends.vllm_grpc.pool), so the transport is configured alike.
CHANNEL_OPTIONS: tuple[tuple[str, Any], ...] = (
    ("grpc.keepalive_time_ms", 30_000),
    ("grpc.keepalive_timeout_ms", 10_000),
    ("grpc.keepalive_permit_without_calls", 0),
    ("grpc.http2.max_pings_without_data", 0),
    ("grpc.max_receive_message_length", 64 * 1024 * 1024),
    ("grpc.max_send_message_length", 64 * 1024 * 1024),
    ("grpc.enable_retries", 0),
    ("grpc.use_local_subchannel_pool", 1),
)


_ids = itertools.count()


def build_request(phase: GrpcPhase) -> Any:
    """A `GenerateRequest` like the gateway's for a token-id completions request."""
    return vllm_engine_pb2.GenerateRequest(
        request_id=f"floor-{next(_ids)}",
        tokenized=vllm_engine_pb2.TokenizedInput(original_text="", input_ids=phase.prompt_ids),
        sampling_params=vllm_engine_pb2.SamplingParams(
            max_tokens=phase.max_tokens, stop=[], stop_token_ids=[], **SAMPLING_DEFAULTS
        ),
        stream=phase.stream,
    )


async def _one(stub: Any, phase: GrpcPhase, recorder: Recorder) -> None:
    start = time.perf_counter()
    first: float | None = None
    last = 0.0
    gaps: list[float] = []
    chunks = 0
    completes = 0
    try:
        call = stub.Generate(build_request(phase), timeout=phase.bounds.request_timeout_s)
        async for response in call:
            if response.HasField("chunk"):
                now = time.perf_counter()
                chunks += 1
                if first is None:
                    first = now
                else:
                    gaps.append(now - last)
                last = now
            else:
                completes += 1
    except grpc.aio.AioRpcError as exc:
        recorder.failure(f"{exc.code().name}: {exc.details()}")
        await asyncio.sleep(0.001)
        return
    latency = time.perf_counter() - start
    if completes != 1 or (phase.stream and first is None):
        recorder.failure(f"unexpected answer: {chunks} chunks, {completes} completes")
    elif first is not None:
        recorder.success(latency, first - start, gaps, chunks)
    else:
        recorder.success(latency)


async def run_phase(phase: GrpcPhase) -> dict[str, Any]:
    """One phase over fresh channels (connected during the warm-up)."""
    channels = [
        grpc.aio.insecure_channel(
            phase.target, options=[*CHANNEL_OPTIONS, ("grpc.channel_pool_index", i)]
        )
        for i in range(phase.channels)
    ]
    turn = itertools.cycle([vllm_engine_pb2_grpc.VllmEngineStub(ch) for ch in channels])
    try:
        return await drive(lambda recorder: _one(next(turn), phase, recorder), phase.bounds)
    finally:
        for channel in channels:
            await channel.close(grace=None)


async def prompt_ids(target: str, text: str, count: int) -> dict[str, Any]:
    """`count` token ids of `text` (repeated as needed) in the stand-in's own vocabulary, read
    from the tokenizer directory its GetModelInfo names (same machine). Real text matters: the
    gateway's detokenizer primes itself with the prompt's tail, and garbage ids cost it more."""
    from tokenizers import Tokenizer

    async with grpc.aio.insecure_channel(target) as channel:
        stub = vllm_engine_pb2_grpc.VllmEngineStub(channel)
        info = await stub.GetModelInfo(vllm_engine_pb2.GetModelInfoRequest(), timeout=10)
    path = Path(info.tokenizer_path) / "tokenizer.json"
    if not info.tokenizer_path or not path.is_file():
        return {"ids": None, "reason": f"no tokenizer.json at {info.tokenizer_path!r}"}
    tokenizer = Tokenizer.from_file(str(path))
    ids: list[int] = []
    while len(ids) < count:
        ids += tokenizer.encode(text, add_special_tokens=False).ids or [0]
    return {"ids": ids[:count], "reason": f"{text!r} encoded with {path}"}


async def _handle(spec: dict[str, Any]) -> dict[str, Any]:
    if spec.get("op") == "prompt_ids":
        return await prompt_ids(str(spec["target"]), str(spec["text"]), int(spec["count"]))
    return await run_phase(GrpcPhase.from_json(spec))


if __name__ == "__main__":
    sys.exit(worker.serve(_handle))
