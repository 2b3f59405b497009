"""The vLLM gRPC backend: `vllm serve MODEL --grpc`, reached through a pool of channels."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, AsyncIterator
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from smg_grpc_proto.generated import common_pb2, vllm_engine_pb2

from backends.base import EmbeddingCall, GenerationRequest
from backends.vllm_grpc.decoding import ResponseDecoder
from backends.vllm_grpc.errors import map_rpc_error
from backends.vllm_grpc.logprobs import TokenTexts
from backends.vllm_grpc.output_formats import OutputFormats
from backends.vllm_grpc.pool import ChannelPool
from backends.vllm_grpc.request_builder import ModelFacts, PreparedPrompt, prepare
from backends.vllm_grpc.tokenizer_fetch import fetch_tokenizer_dir
from backends.vllm_grpc.tokenizer_store import TokenizerBundle, load_tokenizer_bundle
from budgets.deadline import Deadline
from core.answers import (
    BackendHealth,
    Choice,
    Completion,
    Embeddings,
    StreamChunk,
)
from core.errors import BackendError, BackendUnavailable, InvalidRequest
from core.protocol import ChatCompletionRequest

log = logging.getLogger("gateway.backends.vllm_grpc")

READY_SERVICE = "vllm.grpc.engine.VllmEngine"
_LARGE_PROMPT_CHARS = 32_000  # render and tokenize prompts this large off the event loop
_ABORT_TIMEOUT_S = 2.0
_INFO_TIMEOUT_S = 2.0


class VllmGrpcBackend:
    """One vLLM replica. Renders chat templates, tokenizes, and detokenizes locally."""

    def __init__(
        self,
        url: str,
        *,
        model: str,
        channels: int,
        tokenizer_dir: Path | None,
        tokenizer_cache_dir: Path,
        tool_format: str | None = None,
        reasoning_format: str | None = None,
    ) -> None:
        self.url = url
        self.model = model
        self._formats = OutputFormats(tool_format, reasoning_format)
        self._target = url.removeprefix("grpc://")
        self._channels = channels
        self._tokenizer_dir = tokenizer_dir
        self._tokenizer_cache_dir = tokenizer_cache_dir
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
            bundle = await asyncio.to_thread(load_tokenizer_bundle, directory)
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
            raise BackendUnavailable(f"{self.url} is not started")
        return self._pool.stub()

    def _ready(self) -> tuple[TokenizerBundle, ModelFacts, TokenTexts]:
        if self._bundle is None or self._facts is None or self._token_texts is None:
            raise BackendUnavailable(f"{self.url} has not been initialized yet")
        return self._bundle, self._facts, self._token_texts

    async def _prepare(self, request: GenerationRequest) -> PreparedPrompt:
        if isinstance(request.prepared, PreparedPrompt):
            return request.prepared
        bundle, facts, _ = self._ready()
        if _prompt_chars(request) > _LARGE_PROMPT_CHARS:
            return await asyncio.to_thread(prepare, request, bundle, facts, request.request_id)
        return prepare(request, bundle, facts, request.request_id)

    async def prompt_ids(self, request: GenerationRequest) -> list[int]:
        """The prompt's token ids, for prefix-aware routing; the work is kept on the request
        for whichever replica serves it."""
        prepared = await self._prepare(request)
        request.prepared = prepared
        return prepared.prompt_ids

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

    def _decoder(self, request: GenerationRequest, prepared: PreparedPrompt) -> ResponseDecoder:
        bundle, _, token_texts = self._ready()
        return self._formats.decoder(request, prepared, bundle, token_texts)

    async def complete(self, request: GenerationRequest, deadline: Deadline) -> Completion:
        prepared = await self._prepare(request)
        decoder = self._decoder(request, prepared)
        call = self._stub().Generate(
            prepared.message, timeout=deadline.remaining(), metadata=_metadata(request)
        )
        choices: dict[int, Choice] = {}
        try:
            async for response in call:
                done = response.complete
                decoder.note_prompt(done.prompt_tokens, done.cached_tokens)
                state = decoder.choices[done.index]
                logprobs = done.output_logprobs if done.HasField("output_logprobs") else None
                body = state.feed(done.output_ids, logprobs)
                tail = state.finish(_finish_reason(done.finish_reason))
                calls = [
                    {key: value for key, value in call.items() if key != "index"}
                    for call in (body.tool_calls or []) + (tail.tool_calls or [])
                ]
                reasoning = (body.reasoning + tail.reasoning) if state.reasons else ""
                choices[done.index] = Choice(
                    done.index,
                    body.text + tail.text,
                    tail.finish_reason or "stop",
                    body.logprobs,
                    calls or None,
                    reasoning or None,
                )
        except grpc.aio.AioRpcError as exc:
            raise map_rpc_error(exc, self.url, deadline) from exc
        except asyncio.CancelledError:
            call.cancel()
            self._abort(request.request_id)
            raise
        if len(choices) != request.body.n:
            raise BackendError(f"{self.url} ended the answer with {len(choices)} choices")
        return Completion([choices[i] for i in sorted(choices)], decoder.total_usage())

    async def stream(
        self, request: GenerationRequest, deadline: Deadline
    ) -> AsyncGenerator[StreamChunk, None]:
        prepared = await self._prepare(request)
        decoder = self._decoder(request, prepared)
        call = self._stub().Generate(
            prepared.message, timeout=deadline.remaining(), metadata=_metadata(request)
        )
        n = request.body.n
        ended = False
        try:
            async for response in call:
                if response.HasField("chunk"):
                    chunk = response.chunk
                    decoder.note_prompt(chunk.prompt_tokens, chunk.cached_tokens)
                    logprobs = chunk.output_logprobs if chunk.HasField("output_logprobs") else None
                    yield StreamChunk(
                        [decoder.choices[chunk.index].feed(chunk.token_ids, logprobs)]
                    )
                    continue
                # `complete` repeats the last delta's ids: it is metadata only here.
                done = response.complete
                decoder.finished.add(done.index)
                delta = decoder.choices[done.index].finish(_finish_reason(done.finish_reason))
                last = len(decoder.finished) == n
                yield StreamChunk([delta], decoder.total_usage() if last else None)
            ended = True
        except grpc.aio.AioRpcError as exc:
            ended = True
            raise map_rpc_error(exc, self.url, deadline) from exc
        finally:
            if not ended:
                call.cancel()
                self._abort(request.request_id)

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

    async def embed(self, request: EmbeddingCall, deadline: Deadline) -> Embeddings:
        bundle, facts, _ = self._ready()
        inputs = request.body.input
        if isinstance(inputs, str):
            items: list[str | list[int]] = [inputs]
        elif inputs and isinstance(inputs[0], int):
            items = [[int(t) for t in inputs if isinstance(t, int)]]
        else:
            items = [i if isinstance(i, str) else list(i) for i in inputs if not isinstance(i, int)]
        messages = []
        for position, item in enumerate(items):
            ids = bundle.encode(item, add_special_tokens=True) if isinstance(item, str) else item
            if not ids or len(ids) > facts.max_context_length:
                raise InvalidRequest(
                    f"input[{position}] must have 1 to {facts.max_context_length} tokens.",
                    param="input",
                )
            messages.append(
                vllm_engine_pb2.EmbedRequest(
                    request_id=f"{request.request_id}-{position}",
                    tokenized=vllm_engine_pb2.TokenizedInput(
                        original_text=item if isinstance(item, str) else "", input_ids=ids
                    ),
                )
            )
        metadata = tuple(request.headers.items())
        try:
            responses = await asyncio.gather(
                *(
                    self._stub().Embed(m, timeout=deadline.remaining(), metadata=metadata)
                    for m in messages
                )
            )
        except grpc.aio.AioRpcError as exc:
            raise map_rpc_error(exc, self.url, deadline) from exc
        return Embeddings(
            [list(r.embedding) for r in responses], sum(r.prompt_tokens for r in responses)
        )

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
            return BackendHealth(False, f"{exc.code().name}: {exc.details()}")
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

    async def aclose(self) -> None:
        if self._background:
            await asyncio.gather(*self._background, return_exceptions=True)
        if self._pool is not None:
            await self._pool.close()


def _metadata(request: GenerationRequest) -> tuple[tuple[str, str], ...]:
    return tuple(request.headers.items())


def _finish_reason(reason: str) -> str:
    """The engine's reason (a parser may later turn "stop" into "tool_calls")."""
    if reason in ("stop", "length"):
        return reason
    raise BackendError(
        f"the engine ended the request with finish_reason {reason!r}", retryable=False
    )


def _prompt_chars(request: GenerationRequest) -> int:
    body = request.body
    if isinstance(body, ChatCompletionRequest):
        return sum(len(m.content) if isinstance(m.content, str) else 0 for m in body.messages)
    prompt = body.prompt
    return len(prompt) if isinstance(prompt, str) else 0
