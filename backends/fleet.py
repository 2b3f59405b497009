"""Sends a request to its model's replicas and retries once before the first byte: each
attempt's replica and slot come from `backends.attempts`, the replicas themselves are kept by
`backends.fleet_members`."""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import NoReturn, TypeVar

from backends.admission_config import AdmissionConfig as AdmissionConfig
from backends.attempts import Attempts
from backends.base import EmbeddingCall, GenerationRequest
from backends.context_fit import refusal, wider_context
from backends.fleet_members import Members
from backends.hang_watch import HangWatch
from backends.learning import Learning
from backends.open_stream import OpenStream, close_quietly
from backends.outliers import OutlierPolicy, Outliers
from backends.outlook import Demand
from backends.prefix.prompt import PromptBlocks
from backends.replica import Replica
from backends.replica_choice import ReplicaChoice
from backends.routes import ModelRoutes
from backends.silence import HangPolicy
from backends.spent_quota import Failures, give_up, reported
from budgets.output_lengths import OutputLengths
from budgets.priority import Priority
from budgets.request_budget import RequestBudget
from core.answers import Completion, Embeddings, StreamChunk
from core.backend_errors import BackendError
from core.errors import ContextLengthExceeded, DeadlineExceeded, GatewayError
from core.stages import StageName

T = TypeVar("T")


class Fleet:
    """Every configured model's replicas."""

    def __init__(
        self,
        replicas: Sequence[Replica],
        *,
        retry_attempts: int,
        health_interval_s: float,
        health_timeout_s: float,
        health_failures: int = 1,
        admission: AdmissionConfig | None = None,
        slow_start_s: float = 0.0,
        routes: ModelRoutes | None = None,
        clock: Callable[[], float] = time.monotonic,
        chance: Callable[[], float] = random.random,
        prefix_weight: float = 0.0,
        outliers: OutlierPolicy | None = None,
        hangs: HangPolicy | None = None,
    ) -> None:
        self._clock = clock
        self._health_interval_s = health_interval_s
        self.routes = routes or ModelRoutes()
        config = admission or AdmissionConfig(enabled=False, predict=False)
        self.members = Members(
            replicas,
            health_interval_s=health_interval_s,
            health_timeout_s=health_timeout_s,
            health_failures=health_failures,
            admission=admission,
            follow_prefixes=prefix_weight > 0,
            clock=clock,
        )
        self.choice = ReplicaChoice(
            output_quantile=config.output_quantile,
            slow_start_s=slow_start_s,
            prefix_weight=prefix_weight,
            health_interval_s=health_interval_s,
            clock=clock,
            chance=chance,
        )
        self._attempts = Attempts(
            self.members,
            self.choice,
            retry_attempts=retry_attempts,
            predict=config.enabled and config.predict,
            clock=clock,
        )
        self.outliers = Outliers(outliers or OutlierPolicy(), self.members.replicas, clock)
        self.learning = Learning(self.outliers, self.choice.lengths)
        self.hangs = HangWatch(hangs or HangPolicy(), self.outliers, self.choice.lengths, clock)
        self._hang_sweeps: asyncio.Task[None] | None = None

    def declare(self, model: str) -> None:
        """Serve `model` even while it has no replica (a DNS set not resolved yet): requests
        for it are 503s, not 404s, and the gateway is not ready."""
        self.members.declare(model)

    def lengths(self, model: str) -> OutputLengths:
        """The recent output lengths of `model`'s requests that set no cap."""
        return self.choice.lengths(model)

    @property
    def models(self) -> list[str]:
        """The backend models (every version included)."""
        return list(self.members.by_model)

    @property
    def public_models(self) -> list[str]:
        """The names clients choose from (`GET /v1/models`): routes and unrouted models."""
        return self.routes.public(self.members.by_model)

    def replicas(self, model: str) -> list[Replica]:
        return self.members.replicas(model)

    def retiring(self) -> list[Replica]:
        """Replicas taken out (gone from DNS) still finishing their requests."""
        return self.members.retiring()

    def ready(self) -> bool:
        """Some model has a healthy replica (`FleetMembers.ready`)."""
        return self.members.ready()

    async def start(self) -> None:
        await self.members.start()
        if self.hangs.enabled:
            self._hang_sweeps = asyncio.create_task(
                self.hangs.run(self.members.holding, self._health_interval_s)
            )

    async def add(self, replica: Replica) -> None:
        """A replica joins a started fleet (discovered in DNS)."""
        await self.members.add(replica)

    def retire(self, replica: Replica) -> asyncio.Task[None]:
        """Take a replica out (gone from DNS); the returned task ends once it has drained."""
        return self.members.retire(replica)

    async def aclose(self) -> None:
        if self._hang_sweeps is not None:
            self._hang_sweeps.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._hang_sweeps
        await self.hangs.aclose()
        await self.members.aclose()

    def pick(
        self,
        model: str,
        exclude: Sequence[Replica] = (),
        priority: Priority = "interactive",
        demand: Demand | None = None,
        budget: RequestBudget | None = None,
        prefix: PromptBlocks | None = None,
    ) -> Replica:
        """The replica a request goes to (`backends.replica_choice.ReplicaChoice.pick`)."""
        return self.choice.pick(
            self.replicas(model), model, exclude, priority, demand, budget, prefix
        )

    async def prompt_blocks(self, request: GenerationRequest) -> PromptBlocks | None:
        """The prompt's block keys for prefix-aware routing (`ReplicaChoice.prompt_blocks`)."""
        return await self.choice.prompt_blocks(self.replicas(request.body.model), request)

    async def complete(self, request: GenerationRequest, budget: RequestBudget) -> Completion:
        clock = budget.timeline.clock
        demand = Demand.of(request.body)
        prefix = await self.prompt_blocks(request)

        async def call(replica: Replica) -> Completion:
            started, room = clock(), replica.engine_has_room()
            try:
                completion = await self.hangs.complete(replica, request, demand, budget)
            except DeadlineExceeded as exc:
                self.learning.ran_out(replica, demand, clock() - started, room, exc.produced)
                raise
            self.learning.answered(replica, demand, completion.usage, clock() - started, room)
            return completion

        return await self._with_retry(request.body.model, budget, call, demand, prefix)

    async def embed(self, request: EmbeddingCall, budget: RequestBudget) -> Embeddings:
        deadline = budget.total
        return await self._with_retry(
            request.body.model, budget, lambda r: r.backend.embed(request, deadline)
        )

    async def _with_retry(
        self,
        model: str,
        budget: RequestBudget,
        call: Callable[[Replica], Awaitable[T]],
        demand: Demand | None = None,
        prefix: PromptBlocks | None = None,
    ) -> T:
        tried: list[Replica] = []
        needed = 0  # the context a replica refused the request for being too long for
        refusals = 0  # replicas tried that refused it as too long (no retry spent on them)
        earlier = Failures()  # the failures retried
        while True:
            replica, slot = await self._attempts.next(model, tried, budget, demand, prefix, needed)
            started = budget.timeline.clock()
            error: str | None = None  # what the attempt's span says it ended with
            try:
                # The backend enforces the deadline itself (gRPC deadline, HTTP timeout).
                result = await call(replica)
            except BackendError as exc:
                error = _failure(exc)
                self.outliers.failed(replica, exc)
                if not self._attempts.may_retry(exc, tried, model, budget.total, refusals):
                    give_up(exc, earlier, self.replicas(model), tried, self._clock())
                earlier = earlier.after(replica, exc)
            except DeadlineExceeded as exc:
                error = _failure(exc)
                self.outliers.failed(replica, exc)
                raise
            except ContextLengthExceeded as exc:  # a replica of a larger context may take it
                error = _failure(exc)
                refusals += 1
                needed = wider_context(replica, self.replicas(model), tried)
                if not needed:
                    self._refuse(exc, replica, earlier, tried)
            except GatewayError as exc:  # refused as invalid: the replica is fine
                error = _failure(exc)
                raise
            else:
                self.outliers.succeeded(replica)
                return result
            finally:
                slot.release()
                budget.timeline.record(StageName.BACKEND, started, error)

    def _refuse(
        self,
        refused: ContextLengthExceeded,
        by: Replica,
        earlier: Failures,
        tried: list[Replica],
    ) -> NoReturn:
        """No replica is left to take a request `by` refused as too long: raise the refusal,
        or the earlier failure of a wider replica as any last failure is told (`reported`),
        with no replica left untried: those are too narrow to hold the request."""
        told = refusal(refused, by, earlier.last)
        if isinstance(told, BackendError):
            told = reported(told, earlier, tried, tried, self._clock())
        raise told from None

    async def open_stream(self, request: GenerationRequest, budget: RequestBudget) -> OpenStream:
        """A stream whose first chunk has already arrived, so failures so far were retried.

        Waiting for the first chunk is bounded by the first-token deadline; when it fires
        the backend request is cancelled and `DeadlineExceeded` names that budget.
        """
        model = request.body.model
        first_token, timeline = budget.first_token, budget.timeline
        demand = Demand.of(request.body)
        prefix = await self.prompt_blocks(request)
        tried: list[Replica] = []
        needed = refusals = 0  # as in `_with_retry`
        earlier = Failures()
        while True:
            replica, slot = await self._attempts.next(model, tried, budget, demand, prefix, needed)
            started, room = timeline.clock(), replica.engine_has_room()
            chunks = replica.backend.stream(request, budget.total)
            error: str | None = None
            try:
                async with asyncio.timeout(first_token.remaining()):
                    first: StreamChunk | None = await anext(chunks)
            except TimeoutError:
                slot.release()
                await close_quietly(chunks)
                late = DeadlineExceeded(first_token.stage)
                error = _failure(late)
                self.outliers.failed(replica, late)
                self.learning.ran_out(replica, demand, timeline.clock() - started, room, 0)
                raise late from None
            except StopAsyncIteration:
                first = None
            except BackendError as exc:
                error = _failure(exc)
                slot.release()
                await close_quietly(chunks)
                self.outliers.failed(replica, exc)
                if not self._attempts.may_retry(exc, tried, model, budget.total, refusals):
                    give_up(exc, earlier, self.replicas(model), tried, self._clock())
                earlier = earlier.after(replica, exc)
                continue
            except ContextLengthExceeded as exc:
                error = _failure(exc)
                slot.release()
                await close_quietly(chunks)
                refusals += 1
                needed = wider_context(replica, self.replicas(model), tried)
                if not needed:
                    self._refuse(exc, replica, earlier, tried)
                continue
            except BaseException as exc:
                if isinstance(exc, GatewayError):  # refused as invalid
                    error = _failure(exc)
                slot.release()
                await close_quietly(chunks)
                raise
            finally:
                timeline.record(StageName.TTFT, started, error)
            now = timeline.first_token_at = timeline.clock()
            self.hangs.heard(replica)
            finished, failed = self.learning.stream_end(
                replica, demand, first, now - started, started, timeline.clock, room
            )
            return OpenStream(slot, first, chunks, finished, failed)


def _failure(exc: GatewayError) -> str:
    """The code an attempt that failed with `exc` is reported by (as the request's own)."""
    return exc.code or exc.type
