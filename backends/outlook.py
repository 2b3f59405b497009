"""What one request asks of a replica, and what that replica is predicted to take to serve it:
the `Goal` that admission control judges the request by."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from budgets.output_lengths import OutputLengths
from budgets.request_budget import RequestBudget
from budgets.service_estimate import ServiceEstimate
from core.answers import StreamChunk, Usage
from core.protocol import ChatCompletionRequest, CompletionRequest
from core.token_estimate import prompt_tokens


@dataclass(frozen=True, slots=True)
class Demand:
    """A request's size as far as timing goes: its prompt (estimated the same way for every
    request, so observations and predictions agree), its output cap per choice (None: the
    model's recent output lengths stand in), its choices, and whether it streams; and the
    field that sets its cap, for a refusal that names it."""

    prompt_tokens: int
    max_tokens: int | None
    choices: int
    stream: bool
    cap_param: str = "max_tokens"

    @classmethod
    def of(cls, body: ChatCompletionRequest | CompletionRequest) -> Demand:
        return cls(
            prompt_tokens(body),
            body.max_output_tokens,
            body.choice_count,
            body.stream,
            body.max_tokens_param,
        )

    def output_tokens(self, usage: Usage) -> int:
        """Output tokens per choice (choices decode side by side, so time follows one)."""
        return math.ceil(usage.completion_tokens / max(1, self.choices))

    def uncached_tokens(self, usage: Usage) -> int:
        """The prompt tokens the replica's prefix cache did not serve, counted like the prompt
        (the share the backend reports uncached; all of it when it reports none)."""
        return self.uncached_part(cached_share(usage))

    def uncached_part(self, cached: float) -> int:
        """The prompt tokens left to prefill when a `cached` share (0 to 1) of it is cached."""
        if cached <= 0.0:
            return self.prompt_tokens
        return round(self.prompt_tokens * (1.0 - cached))


def cached_share(usage: Usage) -> float:
    """The share of its prompt tokens a backend reports its prefix cache served (0: none)."""
    if usage.prompt_tokens <= 0 or usage.cached_tokens <= 0:
        return 0.0
    return min(usage.cached_tokens, usage.prompt_tokens) / usage.prompt_tokens


def output_tokens(demand: Demand, lengths: OutputLengths) -> int | None:
    """The output length a request is judged by: its cap, else the model's recent quantile of
    output lengths, else unknown (None)."""
    if demand.max_tokens is not None:
        return demand.max_tokens
    recent = lengths.value()
    return None if recent is None else max(1, math.ceil(recent))


def first_chunk_tokens(chunk: StreamChunk) -> int:
    """How many tokens a stream's first chunk brought (at least 1)."""
    return max(1, max((delta.token_count for delta in chunk.deltas), default=1))


@dataclass(frozen=True, slots=True)
class Target:
    """One deadline a request must meet, what it is, and when the replica would reach it:
    `queue_s` in the engine's own queue, then `predicted_s` to serve it."""

    what: str  # "first token" or "answer"
    left_s: float
    predicted_s: float
    queue_s: float = 0.0

    @property
    def slack_s(self) -> float:
        return self.left_s - self.queue_s - self.predicted_s

    @property
    def service_slack_s(self) -> float:
        """What it would have to spare with no queue: negative, no wait can help."""
        return self.left_s - self.predicted_s


class Outlook:
    """A request on one replica: the deadlines it must meet and when it would meet them.

    Every request must have its whole answer within the total; a stream must also have its
    first token within the first-token budget. The time is predicted by the replica's
    `estimate` (fitted over the prompt tokens its prefix cache did not serve) for `prompt`
    tokens, the part of the request's prompt expected uncached there (all of it by default).
    The output length is the request's cap when it has one, else the model's recent
    `output_quantile` of output lengths (requests without a cap), else unknown (and the answer
    is not judged). Predictions are made when asked, so a request judged again at the head of
    the queue is judged with what the replica has learned meanwhile. `backlog` says how many
    engine-fulls of requests it would wait behind inside the engine (admission limits set
    above what the engine runs, or other gateways' load): each costs its expected time.
    """

    __slots__ = ("_backlog", "_budget", "_demand", "_estimate", "_lengths", "_probe", "_prompt")

    def __init__(
        self,
        estimate: ServiceEstimate,
        lengths: OutputLengths,
        demand: Demand,
        budget: RequestBudget,
        prompt: int | None = None,
        backlog: Callable[[], float] | None = None,
    ) -> None:
        self._estimate = estimate
        self._backlog = backlog
        self._lengths = lengths
        self._demand = demand
        self._budget = budget
        self._prompt = demand.prompt_tokens if prompt is None else prompt
        self._probe = False

    @property
    def cap_param(self) -> str:
        """The field that sets the request's output cap (`Demand.cap_param`)."""
        return self._demand.cap_param

    def output_tokens(self) -> int | None:
        return output_tokens(self._demand, self._lengths)

    def prompt_bound(self, target: Target) -> bool:
        """Whether the request's first token alone is predicted past what `target` has left:
        its prompt, not its output, puts it out of reach."""
        first = self._estimate.upper(self._prompt, 1)
        return first is not None and first > target.left_s

    def binding(self) -> Target | None:
        """The deadline with the least to spare (None: nothing can be predicted yet)."""
        return min(self._targets(), key=lambda t: t.slack_s, default=None)

    def _targets(self) -> list[Target]:
        estimate, budget, prompt = self._estimate, self._budget, self._prompt
        targets: list[Target] = []
        tokens = self.output_tokens()
        done = None if tokens is None else estimate.upper(prompt, tokens)
        queue = 0.0
        if self._backlog is not None and tokens is not None and (ahead := self._backlog()) > 0:
            queue = ahead * (estimate.expected(prompt, tokens) or 0.0)
        if done is not None:
            targets.append(Target("answer", budget.total.remaining(), done, queue))
        if self._demand.stream and (first := estimate.upper(prompt, 1)) is not None:
            targets.append(Target("first token", budget.first_token.remaining(), first, queue))
        return targets

    def slack_s(self) -> float | None:
        """What the binding deadline has to spare; None (not judged) when unknown, and for
        the request the estimate or the output lengths let through as their probe
        (`ServiceEstimate.probe`, `OutputLengths.probe`) when it would have been refused:
        refusals teach neither of them anything."""
        if self._probe:
            return None
        targets = self._targets()
        target = min(targets, key=lambda t: t.slack_s, default=None)
        if target is None:
            return None
        if target.service_slack_s < 0.0 and self._probes(targets):
            self._probe = True
            return None
        return target.slack_s

    def _probes(self, targets: list[Target]) -> bool:
        """Whether this request, out of reach of an idle replica, goes through as a probe: of
        the service estimate, or of the output lengths when they alone put it out of reach (it
        set no cap, and only its answer is out of reach)."""
        if self._estimate.probe():
            return True
        if self._demand.max_tokens is not None:
            return False
        others = (t for t in targets if t.what != "answer")
        return all(t.service_slack_s >= 0.0 for t in others) and self._lengths.probe()

    def hold_s(self) -> float | None:
        tokens = self.output_tokens()
        if tokens is None:
            return None
        return self._estimate.expected(self._prompt, tokens)
