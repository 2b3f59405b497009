"""The vLLM gRPC backend: `vllm serve MODEL --grpc`, reached through a pool of channels
(`connection`); it sends generation and embedding requests and decodes their answers."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc

from backends.base import EmbeddingCall, GenerationRequest
from backends.vllm_grpc.batch import all_answers, is_batch, merged_stream, split
from backends.vllm_grpc.collected import CollectedOutput
from backends.vllm_grpc.connection import VllmGrpcConnection
from backends.vllm_grpc.embed_calls import EmbedCalls
from backends.vllm_grpc.embed_requests import embed_requests, input_param
from backends.vllm_grpc.errors import map_rpc_error
from backends.vllm_grpc.logprobs import joined_logprobs
from backends.vllm_grpc.output_formats import OutputFormats
from backends.vllm_grpc.request_builder import PreparedPrompt, prepare
from backends.vllm_grpc.response_decoder import ResponseDecoder, whole_calls
from backends.vllm_grpc.served_model import ServedModel
from budgets.deadline import Deadline
from core.answers import Choice, Completion, Embeddings, StreamChunk
from core.backend_errors import BackendError
from core.protocol import ChatCompletionRequest

_LARGE_PROMPT_CHARS = 32_000  # render and tokenize prompts this large off the event loop
_LARGE_PROMPTS_AT_ONCE = 2
"""Large prompts a replica's client tokenizes at the same time: a 4 MiB prompt can take a few
hundred MB while it is tokenized (its token ids and offsets), so a burst of them must not all
be held at once (a 2 GiB pod would be killed). The others wait their turn, within their
deadlines; prompts under `_LARGE_PROMPT_CHARS` never wait."""


@dataclass(frozen=True, slots=True)
class Prepared:
    """A prompt ready to send, and the model it was prepared for: its answer is decoded with
    that model's tokenizer, whatever the replica has learned since (a restart)."""

    prompt: PreparedPrompt
    served: ServedModel


PrepareCall = tuple[GenerationRequest, Prepared]  # one prompt of a batch, ready to send


class VllmGrpcBackend(VllmGrpcConnection):
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
        watch_whole_answers: bool = False,
        split_special_tokens: bool = True,
        generation_config: bool = True,
    ) -> None:
        super().__init__(
            url,
            model=model,
            channels=channels,
            tokenizer_dir=tokenizer_dir,
            tokenizer_cache_dir=tokenizer_cache_dir,
            split_special_tokens=split_special_tokens,
            generation_config=generation_config,
        )
        self._formats = OutputFormats(tool_format, reasoning_format)
        self._embeds = EmbedCalls(url, self._stub)
        # Every whole answer streamed on the wire, so that its tokens are seen (`complete`);
        # otherwise only one that brings a `progress` listener is.
        self.reports_progress = watch_whole_answers
        self.can_report_progress = True
        self._large_prompts = asyncio.Semaphore(_LARGE_PROMPTS_AT_ONCE)

    async def _prepare(self, request: GenerationRequest) -> Prepared:
        """The request's prompt for this replica's model; one prepared for another replica
        (to route by its prefix) is reused where that replica's model prepares it alike."""
        served = self._ready()
        earlier = request.prepared
        if isinstance(earlier, Prepared) and served.prepares_as(earlier.served):
            return Prepared(earlier.prompt, served)
        bundle, facts = served.bundle, served.facts
        if _prompt_chars(request) <= _LARGE_PROMPT_CHARS:
            return Prepared(prepare(request, bundle, facts, request.request_id), served)
        async with self._large_prompts:
            prompt = await asyncio.to_thread(prepare, request, bundle, facts, request.request_id)
        return Prepared(prompt, served)

    async def prompt_ids(self, request: GenerationRequest) -> list[int]:
        """The prompt's token ids, for prefix-aware routing; the work is kept on the request
        for whichever replica serves it. A batch is routed by its first prompt."""
        if is_batch(request):
            return (await self._prepare(split(request)[0])).prompt.prompt_ids
        prepared = await self._prepare(request)
        request.prepared = prepared
        return prepared.prompt.prompt_ids

    async def _prepare_batch(self, request: GenerationRequest) -> list[PrepareCall]:
        """Each prompt of a batch ready to send; every one is checked (a 400 naming `prompt`)
        before any is sent."""
        return [(part, await self._prepare(part)) for part in split(request)]

    def _decoder(self, request: GenerationRequest, prepared: Prepared) -> ResponseDecoder:
        served = prepared.served
        return self._formats.decoder(request, prepared.prompt, served.bundle, served.token_texts)

    async def complete(self, request: GenerationRequest, deadline: Deadline) -> Completion:
        """A whole answer, decoded once at its end. When told to watch whole answers, or when
        the request brings a `progress` listener, it is streamed on the wire so that
        `request.progress` hears each chunk (the first-token and stall budgets then bound it,
        and a call that runs out says how far it got), at ~50 us of CPU per chunk. A batch
        is one call per prompt (`backends.vllm_grpc.batch`)."""
        if is_batch(request):
            parts = await self._prepare_batch(request)
            calls = [self._complete(part, prepared, deadline) for part, prepared in parts]
            return await all_answers(calls, request.body.n)
        return await self._complete(request, await self._prepare(request), deadline)

    async def _complete(
        self, request: GenerationRequest, prepared: Prepared, deadline: Deadline
    ) -> Completion:
        decoder = self._decoder(request, prepared)
        message = prepared.prompt.message
        progress = request.progress
        message.stream = self.reports_progress or progress is not None
        call = self._stub().Generate(
            message, timeout=deadline.remaining(), metadata=_metadata(request)
        )
        parts: dict[int, CollectedOutput] = {}
        choices: dict[int, Choice] = {}
        try:
            async for response in call:
                if response.HasField("chunk"):
                    chunk = response.chunk
                    part = parts.get(chunk.index)
                    if part is None:
                        part = parts[chunk.index] = CollectedOutput()
                    part.add(chunk)
                    if progress is not None:
                        progress.tick(len(chunk.token_ids))
                    continue
                done = response.complete
                decoder.note_prompt(done.prompt_tokens, done.cached_tokens)
                state = decoder.choices[done.index]
                part = parts.pop(done.index, None) or CollectedOutput.of_complete(done)
                body = state.feed(part.token_ids, part.logprobs, part.prompt_logprobs)
                tail = state.finish(_finish_reason(done.finish_reason, self.url))
                calls = whole_calls((body.tool_calls or []) + (tail.tool_calls or []))
                reasoning = body.reasoning + tail.reasoning
                choices[done.index] = Choice(
                    done.index,
                    body.text + tail.text,
                    tail.finish_reason or "stop",
                    joined_logprobs([body.logprobs, tail.logprobs]),
                    calls or None,
                    reasoning if reasoning or tail.thought else None,
                )
        except grpc.aio.AioRpcError as exc:
            if exc.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
                self._abort(request.request_id)  # the engine may not have heard yet
            raise map_rpc_error(exc, self.url, deadline) from exc
        except asyncio.CancelledError:
            call.cancel()
            self._abort(request.request_id)
            raise
        if len(choices) != request.body.n:
            raise BackendError(f"ended the answer with {len(choices)} choices", replica=self.url)
        return Completion([choices[i] for i in sorted(choices)], decoder.total_usage())

    def stream(
        self, request: GenerationRequest, deadline: Deadline
    ) -> AsyncGenerator[StreamChunk, None]:
        """One prompt's stream; a batch's streams as one (`backends.vllm_grpc.batch`)."""
        if is_batch(request):
            return self._batch_stream(request, deadline)
        return self._stream(request, deadline)

    async def _batch_stream(
        self, request: GenerationRequest, deadline: Deadline
    ) -> AsyncGenerator[StreamChunk, None]:
        parts = await self._prepare_batch(request)
        streams = [self._stream(part, deadline, prepared) for part, prepared in parts]
        merged = merged_stream(streams, request.body.n)
        try:
            async for chunk in merged:
                yield chunk
        finally:  # closed early (the client left): every prompt's call ends now
            await merged.aclose()

    async def _stream(
        self,
        request: GenerationRequest,
        deadline: Deadline,
        prepared: Prepared | None = None,
    ) -> AsyncGenerator[StreamChunk, None]:
        if prepared is None:
            prepared = await self._prepare(request)
        decoder = self._decoder(request, prepared)
        call = self._stub().Generate(
            prepared.prompt.message, timeout=deadline.remaining(), metadata=_metadata(request)
        )
        n = request.body.n
        ended = False
        try:
            async for response in call:
                if response.HasField("chunk"):
                    chunk = response.chunk
                    told = decoder.note_prompt(chunk.prompt_tokens, chunk.cached_tokens)
                    logprobs = chunk.output_logprobs if chunk.HasField("output_logprobs") else None
                    prompt = chunk.input_logprobs if chunk.HasField("input_logprobs") else None
                    yield StreamChunk(
                        [decoder.choices[chunk.index].feed(chunk.token_ids, logprobs, prompt)],
                        None,
                        told,
                    )
                    continue
                yield _choice_end(decoder, response.complete, n, self.url)
            ended = True
        except grpc.aio.AioRpcError as exc:
            ended = exc.code() != grpc.StatusCode.DEADLINE_EXCEEDED  # else Abort it too
            raise map_rpc_error(exc, self.url, deadline) from exc
        finally:
            if not ended:
                call.cancel()
                self._abort(request.request_id)

    async def embed(self, request: EmbeddingCall, deadline: Deadline) -> Embeddings:
        """One `Embed` call per input (`embed_calls`), each input tokenized here."""
        served = self._ready()
        body = request.body
        messages = await embed_requests(body, request.request_id, served.bundle, served.facts)
        responses = await self._embeds.send(
            messages,
            deadline,
            _metadata(request),
            lambda position: input_param(body, position),
        )
        return Embeddings(
            [list(r.embedding) for r in responses], sum(r.prompt_tokens for r in responses)
        )


def _metadata(request: GenerationRequest | EmbeddingCall) -> tuple[tuple[str, str], ...]:
    return tuple(request.headers.items())


def _choice_end(decoder: ResponseDecoder, done: Any, n: int, url: str) -> StreamChunk:
    """The chunk a stream's `complete` for one choice comes to: the choice's finish, and the
    usage once every choice has finished. It reports the prompt too: it may be the stream's
    first message."""
    told = decoder.note_prompt(done.prompt_tokens, done.cached_tokens) if done.prompt_tokens else 0
    decoder.finished.add(done.index)
    state = decoder.choices[done.index]
    deltas = []
    if state.completion_tokens == 0 and done.output_ids:
        # No chunk brought this choice's tokens: it came whole in its `complete` (which
        # otherwise repeats the last chunk's ids, and is metadata only).
        whole = CollectedOutput.of_complete(done)
        deltas.append(state.feed(whole.token_ids, whole.logprobs, whole.prompt_logprobs))
    deltas.append(state.finish(_finish_reason(done.finish_reason, url)))
    usage = decoder.total_usage() if len(decoder.finished) == n else None
    return StreamChunk(deltas, usage, told)


def _finish_reason(reason: str, url: str) -> str:
    """The engine's reason (a parser may later turn "stop" into "tool_calls")."""
    if reason in ("stop", "length"):
        return reason
    raise BackendError(
        f"the engine ended the request with finish_reason {reason!r}",
        retryable=False,
        replica=url,
    )


def _prompt_chars(request: GenerationRequest) -> int:
    body = request.body
    if isinstance(body, ChatCompletionRequest):
        return sum(len(m.content) if isinstance(m.content, str) else 0 for m in body.messages)
    prompt = body.prompt
    return len(prompt) if isinstance(prompt, str) else 0
