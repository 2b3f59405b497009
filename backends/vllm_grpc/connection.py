"""A vLLM replica's gRPC connection: its pool of channels, what its server serves (learned on
first contact, and again after the server was lost or restarted), health and load probes,
KV-cache reports, and aborts; the requests themselves go through `client.VllmGrpcBackend`.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from smg_grpc_proto.generated import common_pb2, vllm_engine_pb2

from backends.served import Served
from backends.vllm_grpc.pool import ChannelPool
from backends.vllm_grpc.served_model import ServedModel, learn
from backends.vllm_grpc.server_start import ServerStart
from core.answers import BackendHealth, Endpoint
from core.backend_errors import BackendUnavailable

log = logging.getLogger("gateway.backends.vllm_grpc")

READY_SERVICE = "vllm.grpc.engine.VllmEngine"
_ABORT_TIMEOUT_S = 2.0
_INFO_TIMEOUT_S = 2.0
_PROBE_TEXT = "Hi"


class VllmGrpcConnection:
    """One vLLM replica's connection, started by `start()`: until the model and tokenizer are
    loaded, health probes retry loading them. A probe that finds the server lost (not
    serving, unreachable) forgets them (the replica is unhealthy then); one that finds it
    restarted (a later start than before, `server_start`) learns them anew and swaps them in,
    the replica staying in rotation meanwhile."""

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
        self._served: ServedModel | None = None
        # The last model learned, kept while forgotten: its tokenizer is reused if unchanged.
        self._known: ServedModel | None = None
        self._start = ServerStart()
        self._watch_start = True  # False once the server turns out not to offer GetServerInfo
        self._init_lock = asyncio.Lock()
        self._background: set[asyncio.Task[Any]] = set()

    async def start(self) -> None:
        self._pool = ChannelPool(self._target, self._channels)
        try:
            await self._initialize(timeout=5.0)
        except Exception as exc:
            log.warning("%s not initialized yet (will retry on health probes): %s", self.url, exc)

    async def _initialize(self, timeout: float, *, replace: bool = False) -> None:
        """Learn what the server serves (unless known, or `replace`), and serve it from then
        on: a replaced model is swapped in one step, so there is always one to prepare with."""
        async with self._init_lock:
            if self._served is not None and not replace:
                return
            stub = self._stub()
            # Its start first: a restart while the rest is asked is then seen by the next probe.
            await self._restarted(timeout)
            served = await learn(
                stub,
                tokenizer_dir=self._tokenizer_dir,
                cache_dir=self._tokenizer_cache_dir,
                timeout=timeout,
                known=self._known,
                split_special_tokens=self._split_special_tokens,
                generation_config=self._generation_config,
            )
            self._served = self._known = served
            log.info(
                "%s serves %r (context %d) with tokenizer from %s",
                self.url,
                served.facts.served_name,
                served.facts.max_context_length,
                served.bundle.directory,
            )

    async def _restarted(self, timeout: float) -> bool:
        """Whether the server started later than when it was last asked (`server_start`)."""
        if not self._watch_start:
            return False
        asked = time.monotonic()
        try:
            info = await self._stub().GetServerInfo(
                vllm_engine_pb2.GetServerInfoRequest(), timeout=timeout
            )
        except grpc.aio.AioRpcError as exc:
            if exc.code() != grpc.StatusCode.UNIMPLEMENTED:
                raise
            self._watch_start = False
            return False
        now = time.monotonic()
        return self._start.restarted(info.uptime_seconds, now, now - asked)

    def _forget(self, why: str) -> None:
        """The server was lost: what it served is learned again before it is served again."""
        if self._served is not None:
            log.info("%s: %s; its model and tokenizer will be learned again", self.url, why)
        self._served = None
        self._start.forget()

    async def _relearn(self, timeout: float) -> None:
        """The server restarted: requests are still prepared with what it served until what
        it serves now is learned (in flight they keep theirs); one it would refuse fails
        and is retried like any. A server that cannot tell is as good as gone."""
        log.info("%s restarted; its model and tokenizer are learned again", self.url)
        try:
            await self._initialize(timeout, replace=True)
        except BaseException:
            self._forget("restarted, and what it serves could not be learned")
            raise

    def served(self) -> Served | None:
        """What the server serves (`backends.served`), or None until it is learned."""
        served = self._served
        return None if served is None else served.described

    def _stub(self) -> Any:
        if self._pool is None:
            raise BackendUnavailable("not started", replica=self.url)
        return self._pool.stub()

    def _ready(self) -> ServedModel:
        """What the server serves now; a request keeps what it was prepared with."""
        served = self._served
        if served is None:
            raise BackendUnavailable("not initialized yet", replica=self.url)
        return served

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
                self._forget("not serving")
                return BackendHealth(False, "NOT_SERVING")
            if self._served is not None and await self._restarted(timeout):
                await self._relearn(timeout=max(timeout, 10.0))
            if self._served is None:
                await self._initialize(timeout=max(timeout, 10.0))
            loads = await self._stub().GetLoads(vllm_engine_pb2.GetLoadsRequest(), timeout=timeout)
        except grpc.aio.AioRpcError as exc:
            # A busy server may miss a probe; one unreachable may come back changed.
            missed = exc.code() == grpc.StatusCode.DEADLINE_EXCEEDED and self._served is not None
            if not missed:
                self._forget(f"probe failed with {exc.code().name}")
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
        served = self._served
        if self._pool is None or served is None:
            return True
        request_id = f"probe-{os.urandom(6).hex()}"
        message = vllm_engine_pb2.GenerateRequest(
            request_id=request_id,
            tokenized=vllm_engine_pb2.TokenizedInput(
                original_text="",
                input_ids=served.bundle.encode(_PROBE_TEXT, add_special_tokens=True)[:1],
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
