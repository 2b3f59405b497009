"""`vllm.grpc.engine.VllmEngine`: every RPC but Generate (see `generate`), and the handler table.

Methods not listed (FlushCache, profiling) answer UNIMPLEMENTED, as grpc does for any method
a server does not register; so does SubscribeKvEvents with `kv_events` off.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import grpc
from smg_grpc_proto.generated import common_pb2
from smg_grpc_proto.generated import vllm_engine_pb2 as pb

from standin.vllm.embedding import embed
from standin.vllm.generate import Context, GenerateHandler
from standin.vllm.generator import SimModel
from standin.vllm.prefix_cache import BLOCK_SIZE
from standin.vllm.state import SimState
from standin.vllm.tokenizer_bundle import TokenizerArchive, archive_chunks

SERVICE = "vllm.grpc.engine.VllmEngine"
VLLM_VERSION = "0.0.0+sim"


class EngineServicer:
    """The non-generating RPCs of one server."""

    def __init__(self, state: SimState, model: SimModel) -> None:
        self.state = state
        self.model = model
        self.generator = GenerateHandler(state, model)
        self.archive = TokenizerArchive(model.vocab.directory)

    async def embed(self, request: Any, context: Context) -> Any:
        if not request.HasField("tokenized"):
            await context.abort(
                grpc.StatusCode.INVALID_ARGUMENT, "EmbedRequest requires tokenized input"
            )
        token_ids = list(request.tokenized.input_ids)
        if not token_ids:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "The prompt cannot be empty.")
        config = self.state.config
        if len(token_ids) > config.max_context_length:
            await context.abort(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"The prompt (length {len(token_ids)}) is longer than the maximum model length "
                f"of {config.max_context_length}.",
            )
        if max(token_ids) >= self.model.vocab.vocab_size:
            await context.abort(
                grpc.StatusCode.INVALID_ARGUMENT, f"Token id {max(token_ids)} is out of vocabulary."
            )
        vector = embed(token_ids, config.embedding_dim)
        self.state.counters.embed_calls += 1
        if config.embed_ms > 0:
            await self._take_time(config.embed_ms)
        return pb.EmbedResponse(
            embedding=vector, prompt_tokens=len(token_ids), embedding_dim=len(vector)
        )

    async def _take_time(self, ms: float) -> None:
        """An Embed call that runs a while, counted while it runs (and if cancelled)."""
        state = self.state
        counters = state.counters
        state.embeds_running += 1
        counters.embeds_peak = max(counters.embeds_peak, state.embeds_running)
        try:
            await asyncio.sleep(ms / 1000.0)
        except asyncio.CancelledError:
            counters.embeds_cancelled += 1
            raise
        finally:
            state.embeds_running -= 1

    async def health_check(self, request: Any, context: Context) -> Any:
        return pb.HealthCheckResponse(healthy=True, message="Health")

    async def abort(self, request: Any, context: Context) -> Any:
        self.state.abort(list(request.request_ids))
        return pb.AbortResponse()

    async def get_model_info(self, request: Any, context: Context) -> Any:
        config = self.state.config
        vocab = self.model.vocab
        return pb.GetModelInfoResponse(
            model_path=config.model,
            is_generation=True,
            max_context_length=config.max_context_length,
            vocab_size=vocab.vocab_size,
            supports_vision=False,
            served_model_name=config.model,
            tokenizer_path=str(vocab.directory),
            model_type="sim",
            architectures=["SimForCausalLM"],
            eos_token_ids=[vocab.eos_id],
            pad_token_id=vocab.pad_id,
            bos_token_id=vocab.bos_id,
            max_req_input_len=config.max_context_length,
        )

    async def get_server_info(self, request: Any, context: Context) -> Any:
        state = self.state
        return pb.GetServerInfoResponse(
            active_requests=state.active_requests,
            is_paused=False,
            last_receive_timestamp=state.last_receive_wall,
            uptime_seconds=time.time() - state.started_wall,
            server_type="vllm-grpc",
            data_parallel_size=1,
            kv_cache_dtype="auto",
            block_size=BLOCK_SIZE,
            model_dtype="torch.bfloat16",
            max_num_seqs=state.config.max_concurrency,
        )

    async def get_loads(self, request: Any, context: Context) -> Any:
        state = self.state
        config = state.config
        usage = state.token_usage
        cache = state.prefix_cache
        load = pb.SchedulerLoad(
            dp_rank=0,
            num_running_reqs=state.admission.running,
            num_waiting_reqs=state.admission.waiting,
            num_total_reqs=state.active_requests,
            num_used_tokens=min(state.used_tokens, config.kv_cache_tokens),
            max_total_num_tokens=config.kv_cache_tokens,
            token_usage=usage,
            utilization=usage,
            cache_hit_rate=cache.hit_rate if cache is not None else 0.0,
            max_running_requests=config.max_concurrency,
        )
        return pb.GetLoadsResponse(
            timestamp=datetime.now(UTC).isoformat(),
            version=VLLM_VERSION,
            dp_rank_count=1,
            loads=[load],
        )

    async def get_tokenizer(self, request: Any, context: Context) -> AsyncIterator[Any]:
        try:
            data, sha256 = await self.archive.get()
        except OSError as exc:
            await context.abort(grpc.StatusCode.INTERNAL, f"tokenizer archive: {exc}")
        for piece, digest in archive_chunks(data, sha256):
            yield common_pb2.GetTokenizerChunk(data=piece, sha256=digest)

    async def subscribe_kv_events(self, request: Any, context: Context) -> AsyncIterator[Any]:
        state = self.state
        if not state.config.kv_events or state.prefix_cache is None:
            await context.abort(grpc.StatusCode.UNIMPLEMENTED, "KV events are off")
        async for batch in state.kv_events.subscribe():
            yield batch

    def handler(self) -> grpc.GenericRpcHandler[Any, Any]:
        unary = grpc.unary_unary_rpc_method_handler
        stream = grpc.unary_stream_rpc_method_handler
        return grpc.method_handlers_generic_handler(
            SERVICE,
            {
                "Generate": stream(
                    self.generator.generate,
                    pb.GenerateRequest.FromString,
                    pb.GenerateResponse.SerializeToString,
                ),
                "Embed": unary(self.embed, pb.EmbedRequest.FromString, _serialize),
                "HealthCheck": unary(
                    self.health_check, pb.HealthCheckRequest.FromString, _serialize
                ),
                "Abort": unary(self.abort, pb.AbortRequest.FromString, _serialize),
                "GetModelInfo": unary(
                    self.get_model_info, pb.GetModelInfoRequest.FromString, _serialize
                ),
                "GetServerInfo": unary(
                    self.get_server_info, pb.GetServerInfoRequest.FromString, _serialize
                ),
                "GetLoads": unary(self.get_loads, pb.GetLoadsRequest.FromString, _serialize),
                "SubscribeKvEvents": stream(
                    self.subscribe_kv_events,
                    common_pb2.SubscribeKvEventsRequest.FromString,
                    _serialize,
                ),
                "GetTokenizer": stream(
                    self.get_tokenizer, common_pb2.GetTokenizerRequest.FromString, _serialize
                ),
            },
        )


def _serialize(message: Any) -> bytes:
    data: bytes = message.SerializeToString()
    return data
