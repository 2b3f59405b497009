"""The non-generating VllmEngine RPCs: model/server info, loads, tokenizer, embed, health."""

from __future__ import annotations

import hashlib
import io
import json
import math
import zipfile
from typing import Any

import grpc
import pytest
from smg_grpc_proto.generated import common_pb2
from smg_grpc_proto.generated import vllm_engine_pb2 as pb

from standin.vllm.served_model import load_model
from standin.vllm.server import SimServer
from standin.vllm.tokenizer_bundle import CHUNK_BYTES
from tests.standin.vllm.helpers import collect, generate_request, wait_until

VOCAB = load_model().vocab


async def test_model_info_describes_the_model(stub: Any) -> None:
    """GetModelInfo reports the served name, context, vocabulary and special ids."""
    info = await stub.GetModelInfo(pb.GetModelInfoRequest(), timeout=10)
    assert info.served_model_name == "sim"
    assert info.model_path == "sim"
    assert info.is_generation
    assert info.max_context_length == 4096
    assert info.vocab_size == VOCAB.vocab_size
    assert list(info.eos_token_ids) == [VOCAB.eos_id]
    assert info.bos_token_id == VOCAB.bos_id
    assert info.pad_token_id == VOCAB.pad_id
    assert info.tokenizer_path == str(VOCAB.directory)


async def test_server_info_counts_active_requests(sim: SimServer, stub: Any) -> None:
    """GetServerInfo names the server type and counts requests in flight."""
    sim.configure(hang_rate=1.0)
    call = stub.Generate(generate_request(request_id="held"), timeout=60)
    await wait_until(lambda: sim.stats()["running"] == 1)
    info = await stub.GetServerInfo(pb.GetServerInfoRequest(), timeout=10)
    assert info.server_type == "vllm-grpc"
    assert info.active_requests == 1
    loads = await stub.GetLoads(pb.GetLoadsRequest(), timeout=10)
    (load,) = loads.loads
    assert (load.num_running_reqs, load.num_waiting_reqs, load.num_total_reqs) == (1, 0, 1)
    assert 0.0 < load.token_usage < 1.0
    assert load.max_running_requests == 256
    call.cancel()


async def test_tokenizer_zip_verifies_and_holds_tokenizer_json(stub: Any) -> None:
    """GetTokenizer streams a zip whose SHA-256 rides on the last chunk only."""
    chunks = [
        chunk async for chunk in stub.GetTokenizer(common_pb2.GetTokenizerRequest(), timeout=30)
    ]
    assert chunks
    assert all(len(chunk.data) <= CHUNK_BYTES for chunk in chunks)
    assert all(chunk.sha256 == "" for chunk in chunks[:-1])
    data = b"".join(chunk.data for chunk in chunks)
    assert chunks[-1].sha256 == hashlib.sha256(data).hexdigest()
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        names = set(archive.namelist())
        config = json.loads(archive.read("tokenizer_config.json"))
    assert {"tokenizer.json", "tokenizer_config.json"} <= names
    assert config["eos_token"] == "<|im_end|>"


async def test_tokenizer_archive_is_built_once(stub: Any) -> None:
    """Two downloads get the same bytes."""
    request = common_pb2.GetTokenizerRequest()
    first = [c.sha256 async for c in stub.GetTokenizer(request, timeout=30)][-1]
    second = [c.sha256 async for c in stub.GetTokenizer(request, timeout=30)][-1]
    assert first == second


async def test_embed_returns_a_deterministic_unit_vector(stub: Any) -> None:
    """Embed answers a unit-norm vector of the configured size, the same every time."""
    request = pb.EmbedRequest(request_id="e", tokenized=pb.TokenizedInput(input_ids=[5, 6, 7]))
    first = await stub.Embed(request, timeout=10)
    second = await stub.Embed(request, timeout=10)
    assert first.embedding_dim == len(first.embedding) == 384
    assert first.prompt_tokens == 3
    assert math.isclose(math.sqrt(sum(v * v for v in first.embedding)), 1.0, rel_tol=1e-5)
    assert list(first.embedding) == list(second.embedding)


async def test_embed_without_tokenized_input_is_invalid(stub: Any) -> None:
    """Embed needs tokenized input."""
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.Embed(pb.EmbedRequest(request_id="e"), timeout=10)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT


async def test_health_check_rpc_is_healthy(stub: Any) -> None:
    """The engine's own HealthCheck answers healthy."""
    reply = await stub.HealthCheck(pb.HealthCheckRequest(), timeout=10)
    assert reply.healthy


async def test_unserved_methods_are_unimplemented(stub: Any) -> None:
    """RPCs the stand-in does not serve answer UNIMPLEMENTED."""
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.FlushCache(common_pb2.FlushCacheRequest(), timeout=10)
    assert caught.value.code() == grpc.StatusCode.UNIMPLEMENTED


async def test_abort_of_unknown_ids_is_recorded(sim: SimServer, stub: Any) -> None:
    """Abort accepts ids it does not know and records them."""
    await stub.Abort(pb.AbortRequest(request_ids=["x", "y"]), timeout=10)
    assert sim.stats()["aborted_request_ids"] == ["x", "y"]
    await collect(stub, generate_request(max_tokens=1))
