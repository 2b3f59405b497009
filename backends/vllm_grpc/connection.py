"""A vLLM replica's gRPC connection: its pool of channels, the model's facts and tokenizer
learned on first contact, health and load probes, KV-cache reports, and aborts; the requests
themselves go through `client.VllmGrpcBackend`.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from smg_grpc_proto.generated import common_pb2, vllm_engine_pb2

from backends.vllm_grpc.logprobs import TokenTexts
from backends.vllm_grpc.pool import ChannelPool
from backends.vllm_grpc.request_builder import ModelFacts
from backends.vllm_grpc.tokenizer_fetch import fetch_tokenizer_dir
from backends.vllm_grpc.tokenizer_store import TokenizerBundle, load_tokenizer_bundle
from core.answers import BackendHealth, Endpoint
from core.errors import BackendUnavailable

log = logging.getLogger("gateway.backends.vllm_grpc")

READY_SERVICE = "vllm.grpc.engine.VllmEngine"
_ABORT_TIMEOUT_S = 2.0
_INFO_TIMEOUT_S = 2.0
_PROBE_TEXT = "Hi"


class VllmGrpcConnection:
    """One vLLM replica's connection, started by `start()`: until the model and tokenizer are
    loaded, health probes retry loading them."""

    def __init__(
        self,
        url: str,
        *,
        model: str,
        channels: int,
        tokenizer_dir: Path | None,
        tokenizer_cache_dir: Path,
        split_special_tokens: bool = True,
        generation_config: bool = True,
    ) -> None:
        self.url = url
        self.model = model
        self._target = url.removeprefix("grpc://")
        self._channels = channels
        self._tokenizer_dir = tokenizer_dir
        self._tokenizer_cache_dir = tokenizer_cache_dir
        self._split_special_tokens = split_special_tokens
        self._generation_config = generation_config
        self._pool: ChannelPool | None = None
        self._bundle: TokenizerBundle | None = None
        self._facts: ModelFacts | None = None
        self._token_texts: TokenTexts | None = None
        self._init_lock = asyncio.Lock()
        self._background: set[asyncio.Task[Any]] = set()

    async def start(self) -> None:
        self._pool = ChannelPool(self._target, self._channels)
        try:
            await self._initialize(timeout=5.0)
        except Exception as exc:
            log.warning("%s not initialized yet (will retry on health probes): %s", self.url, exc)

    async def _initialize(self, timeout: float) -> None:
        async with self._init_lock:
            if self._bundle is not None:
                return
            stub = self._stub()
            info = await stub.GetModelInfo(vllm_engine_pb2.GetModelInfoRequest(), timeout=timeout)
            directory = self._tokenizer_dir
            if directory is None:
                directory = await fetch_tokenizer_dir(stub, self._tokenizer_cache_dir, timeout)
            bundle = await asyncio.to_thread(
                load_tokenizer_bundle,
                directory,
                split_special_tokens=self._split_special_tokens,
                generation_config=self._generation_config,
            )
            self._facts = ModelFacts(
                served_name=info.served_model_name,
                max_context_length=info.max_context_length or 4096,
                vocab_size=info.vocab_size or bundle.tokenizer.get_vocab_size(),
            )
            self._token_texts = TokenTexts(bundle.tokenizer)
            self._bundle = bundle
            log.info(
                "%s serves %r (context %d) with tokenizer from %s",
                self.url,
                info.served_model_name,
                self._facts.max_context_length,
                directory,
            )

    def _stub(self) -> Any:
        if self._pool is None:
            raise BackendUnavailable("not started", replica=self.url)
        return self._pool.stub()

    def _ready(self) -> tuple[TokenizerBundle, ModelFacts, TokenTexts]:
        if self._bundle is None or self._facts is None or self._token_texts is None:
            raise BackendUnavailable("not initialized yet", replica=self.url)
        return self._bundle, self._facts, self._token_texts

    async def block_size(self) -> int:
        """The KV-cache block size `GetServerInfo` reports (0: not reported, as some vLLM
        versions do; the first `BlockStored` event tells it then)."""
        info = await self._stub().GetServerInfo(
            vllm_engine_pb2.GetServerInfoRequest(), timeout=_INFO_TIMEOUT_S
        )
        size: int = info.block_size
        return size

    def kv_events(self) -> AsyncIterator[Any]:
        """The replica's `SubscribeKvEvents` stream, from its current state on."""
        stream: AsyncIterator[Any] = self._stub().SubscribeKvEvents(
            common_pb2.SubscribeKvEventsRequest()
        )
        return stream

    def _abort(self, request_id: str) -> None:
        """Tell the engine to drop the request; cancelling the RPC alone may race with it."""
        if self._pool is None:
            return
        message = vllm_engine_pb2.AbortRequest(request_ids=[request_id])
        task = asyncio.ensure_future(self._send_abort(message))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _send_abort(self, message: Any) -> None:
        try:
            await self._stub().Abort(message, timeout=_ABORT_TIMEOUT_S)
        except Exception as exc:
            log.info("abort on %s failed: %s", self.url, exc)

    async def health(self, timeout: float) -> BackendHealth:
        if self._pool is None:
            return BackendHealth(False, "not started")
        try:
            health_stub = health_pb2_grpc.HealthStub(self._pool.channel())
            status = await health_stub.Check(
                health_pb2.HealthCheckRequest(service=READY_SERVICE), timeout=timeout
            )
            if status.status != health_pb2.HealthCheckResponse.SERVING:
                return BackendHealth(False, "NOT_SERVING")
            if self._bundle is None:
                await self._initialize(timeout=max(timeout, 10.0))
            loads = await self._stub().GetLoads(vllm_engine_pb2.GetLoadsRequest(), timeout=timeout)
        except grpc.aio.AioRpcError as exc:
            missed = exc.code() == grpc.StatusCode.DEADLINE_EXCEEDED
            return BackendHealth(False, f"{exc.code().name}: {exc.details()}", missed=missed)
        except Exception as exc:
            return BackendHealth(False, f"{type(exc).__name__}: {exc}")
        return BackendHealth(
            True,
            "serving",
            running=sum(load.num_running_reqs for load in loads.loads),
            waiting=sum(load.num_waiting_reqs for load in loads.loads),
            kv_usage=max((load.token_usage for load in loads.loads), default=0.0),
            capacity=sum(load.max_running_requests for load in loads.loads),
        )

    async def probe_generation(self, endpoint: Endpoint, timeout: float) -> bool:
        """One greedy token after a one-token prompt, unstreamed: the engine itself must
        answer (its health check is the server's, and passes while the engine hangs). Any
        endpoint's requests reach the same engine; a replica not started or not initialized
        has taken no request to hang on."""
        if self._pool is None or self._bundle is None:
            return True
        request_id = f"probe-{os.urandom(6).hex()}"
        message = vllm_engine_pb2.GenerateRequest(
            request_id=request_id,
            tokenized=vllm_engine_pb2.TokenizedInput(
                original_text="",
                input_ids=self._bundle.encode(_PROBE_TEXT, add_special_tokens=True)[:1],
            ),
            sampling_params=vllm_engine_pb2.SamplingParams(
                temperature=0.0, top_p=1.0, repetition_penalty=1.0, max_tokens=1, n=1
            ),
            stream=False,
        )
        try:
            async for _ in self._stub().Generate(message, timeout=timeout):
                pass
        except grpc.aio.AioRpcError as exc:
            if exc.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
                self._abort(request_id)
                return False
        except Exception as exc:  # a probe reports, it never raises
            log.info("generation probe of %s failed: %s", self.url, exc)
        return True

    async def aclose(self) -> None:
        if self._background:
            await asyncio.gather(*self._background, return_exceptions=True)
        if self._pool is not None:
            await self._pool.close()
