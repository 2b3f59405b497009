"""The Generate RPC: validate, admit, pace and send DELTA chunks / completes like the real server.

Timing model: token i of every choice is produced at admission + ttft + i * itl; a chunk
leaves when its last token is produced. With both latencies at zero nothing sleeps.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import grpc

from standin.vllm import responses
from standin.vllm.admission import QueueFull, Ticket
from standin.vllm.config import SimConfig
from standin.vllm.faults import FaultPlan, plan_faults
from standin.vllm.generator import SimModel
from standin.vllm.params import InvalidRequest, ParsedGenerate, UnsupportedRequest, parse_generate
from standin.vllm.sampling import Generation
from standin.vllm.state import SimState

log = logging.getLogger(__name__)

Context = grpc.aio.ServicerContext[Any, Any]


class GenerateHandler:
    """Serves `VllmEngine/Generate` for one server."""

    def __init__(self, state: SimState, model: SimModel) -> None:
        self.state = state
        self.model = model

    async def generate(self, request: Any, context: Context) -> None:
        state = self.state
        config = state.config
        call_index = state.begin_call(context.invocation_metadata())
        try:
            parsed = parse_generate(request, self.model.vocab, config.max_context_length)
        except InvalidRequest as exc:
            state.counters.invalid += 1
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        except UnsupportedRequest as exc:
            state.counters.invalid += 1
            await context.abort(grpc.StatusCode.UNIMPLEMENTED, str(exc))
        faults = plan_faults(config, call_index)
        if faults.error:
            state.counters.injected_errors += 1
            await context.abort(
                grpc.StatusCode.INTERNAL, f"injected fault: engine error on call {call_index}"
            )
        ticket = state.register(parsed.request_id)
        try:
            await _Run(self, parsed, config, faults, ticket, context).execute()
        except QueueFull as exc:
            state.counters.rejected += 1
            await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, str(exc))
        except asyncio.CancelledError:
            state.record_cancelled(parsed.request_id)
            raise
        except grpc.aio.AbortError:
            raise
        except Exception as exc:
            log.exception("sim: Generate %s failed", parsed.request_id)
            await context.abort(grpc.StatusCode.INTERNAL, f"sim error: {exc}")
        finally:
            state.unregister(ticket)


class _Run:
    """One request from admission to its last message."""

    def __init__(
        self,
        handler: GenerateHandler,
        parsed: ParsedGenerate,
        config: SimConfig,
        faults: FaultPlan,
        ticket: Ticket,
        context: Context,
    ) -> None:
        self.state = handler.state
        self.parsed = parsed
        self.config = config
        self.faults = faults
        self.ticket = ticket
        self.context = context
        spec = parsed.spec
        self.gens = handler.model.generate_all(
            parsed.prompt_ids,
            spec,
            output_tokens=config.output_tokens,
            max_context_length=config.max_context_length,
            tool_format=config.tool_format,
            reasoning=config.reasoning,
        )
        self.longest = max(len(gen.token_ids) for gen in self.gens)
        self.top_k = spec.logprobs or 0
        self.prompt_tokens = len(parsed.prompt_ids)
        self.cached_tokens = 0
        self.prompt_logprobs: Any = None
        if spec.prompt_logprobs is not None:
            lp = handler.model.prompt_logprobs(parsed.prompt_ids, spec)
            self.prompt_logprobs = responses.input_logprobs(lp, spec.prompt_logprobs)
        self.ttft = config.ttft_ms / 1000.0
        self.itl = config.itl_ms / 1000.0
        self.start = 0.0

    async def execute(self) -> None:
        state = self.state
        if not await state.admission.acquire(self.ticket):
            await self._send_aborted(0)
            return
        reserved = self.prompt_tokens + sum(len(gen.token_ids) for gen in self.gens)
        state.used_tokens += reserved
        try:
            if state.prefix_cache is not None:
                self.cached_tokens = state.prefix_cache.lookup_and_insert(self.parsed.prompt_ids)
            uncached = self.prompt_tokens - self.cached_tokens
            self.ttft += uncached * state.config.prefill_ms_per_token / 1000.0
            self.start = asyncio.get_running_loop().time()
            if self.faults.hang:
                state.counters.injected_hangs += 1
                await self.ticket.pause(None)
            if self.parsed.stream:
                await self._stream()
            else:
                await self._unary()
        finally:
            state.admission.release()
            state.used_tokens -= reserved

    async def _wait_until_produced(self, tokens: int) -> None:
        """Sleep until `tokens` tokens of every choice exist (abortable)."""
        if self.ttft or self.itl:
            due = self.start + self.ttft + (tokens - 1) * self.itl
            delay = due - asyncio.get_running_loop().time()
            if delay > 0:
                await self.ticket.pause(delay)

    async def _die(self, sent: int) -> None:
        self.state.counters.died += 1
        await self.context.abort(
            self.config.die_status, f"injected fault: engine died after {sent} tokens"
        )

    async def _stream(self) -> None:
        ticket = self.ticket
        write = self.context.write
        step = self.config.tokens_per_chunk
        die_after = self.faults.die_after
        paced = bool(self.ttft or self.itl)
        with_logprobs = self.gens[0].logprobs is not None
        active = self.gens
        sent = 0
        while active and not ticket.aborted:
            end = sent + step
            if die_after is not None:
                if sent >= die_after:
                    await self._die(sent)
                end = min(end, die_after)
            if paced:
                await self._wait_until_produced(end)
                if ticket.aborted:
                    break
            unfinished = []
            for gen in active:
                delta = gen.token_ids[sent:end]
                logprobs = self._logprobs(gen, sent, end) if with_logprobs else None
                await write(
                    responses.chunk(
                        delta,
                        index=gen.index,
                        prompt_tokens=self.prompt_tokens,
                        cached_tokens=self.cached_tokens,
                        logprobs=logprobs,
                        prompt_logprobs=self.prompt_logprobs if sent == 0 else None,
                    )
                )
                if end >= len(gen.token_ids):
                    await write(self._complete(gen, delta, logprobs))
                else:
                    unfinished.append(gen)
            active = unfinished
            sent = end
        if active:
            await self._send_aborted(0, active, streaming=True)
        else:
            self._count_completed()

    async def _unary(self) -> None:
        die_after = self.faults.die_after
        if die_after is not None and die_after < self.longest:
            await self._wait_until_produced(die_after)
            if not self.ticket.aborted:
                await self._die(die_after)
        else:
            await self._wait_until_produced(self.longest)
        if self.ticket.aborted:
            await self._send_aborted(self._produced())
            return
        for gen in self.gens:
            logprobs = self._logprobs(gen, 0, len(gen.token_ids))
            await self.context.write(self._complete(gen, gen.token_ids, logprobs))
        self._count_completed()

    def _produced(self) -> int:
        """How many tokens per choice exist by now (for an abort mid-way)."""
        elapsed = asyncio.get_running_loop().time() - self.start
        if self.faults.hang or elapsed < self.ttft:
            return 0
        if not self.itl:
            return self.longest
        return min(self.longest, int((elapsed - self.ttft) / self.itl) + 1)

    def _logprobs(self, gen: Generation, start: int, end: int) -> Any:
        if gen.logprobs is None:
            return None
        return responses.output_logprobs(gen.logprobs.window(start, end), self.top_k)

    def _complete(self, gen: Generation, output_ids: tuple[int, ...], logprobs: Any) -> Any:
        return responses.complete(
            output_ids,
            index=gen.index,
            finish_reason=gen.finish_reason,
            prompt_tokens=self.prompt_tokens,
            cached_tokens=self.cached_tokens,
            matched_token_id=gen.matched_token_id,
            matched_stop_str=gen.matched_stop_str,
            logprobs=logprobs,
            prompt_logprobs=self.prompt_logprobs,
        )

    async def _send_aborted(
        self, produced: int, gens: list[Generation] | None = None, *, streaming: bool = False
    ) -> None:
        """vLLM's final output for an aborted request: streaming, an empty delta chunk then a
        complete with no ids; otherwise a complete with what was produced so far."""
        streaming = streaming or self.parsed.stream
        for gen in self.gens if gens is None else gens:
            output_ids = () if streaming else gen.token_ids[:produced]
            if streaming:
                await self.context.write(
                    responses.chunk(
                        (),
                        index=gen.index,
                        prompt_tokens=self.prompt_tokens,
                        cached_tokens=self.cached_tokens,
                    )
                )
            logprobs = None if streaming else self._logprobs(gen, 0, produced)
            await self.context.write(
                responses.complete(
                    output_ids,
                    index=gen.index,
                    finish_reason="abort",
                    prompt_tokens=self.prompt_tokens,
                    cached_tokens=self.cached_tokens,
                    logprobs=logprobs,
                    prompt_logprobs=self.prompt_logprobs,
                )
            )
        self.state.counters.aborted += 1

    def _count_completed(self) -> None:
        counters = self.state.counters
        counters.completed += 1
        counters.prompt_tokens += self.prompt_tokens
        counters.completion_tokens += sum(len(gen.token_ids) for gen in self.gens)
