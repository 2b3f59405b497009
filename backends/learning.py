"""What the fleet learns from how a call on a replica ended: a clean end teaches the replica's
service estimate (over the uncached part of prompts, for routing and admission alike), how
much of its prompts its cache served, and the model's output lengths, and clears its
failures; a failure counts against it (`backends.outliers`), and one for lack of time (a
deadline fired) teaches the estimate a lower bound: the token after the last one that came
would have come no sooner; for a request that set no cap, it also teaches the output lengths
that its answer was longer than that.

A run-out is judged by the tokens that came, not by the length the request was admitted on:
when answers grow longer, uncapped calls run out because they are longer than assumed, and
judged at the assumed length they taught the replica's estimate that it was slow (16-token
capped requests it served in 90 ms were then refused as too short, 95% of them).

Only calls that started at once in the engine teach the estimate: one admitted while the
engine was full (it reported requests waiting, or more of ours in flight than it runs at once)
waited in the engine's queue first, and that wait is load, not the service time a request of
its size takes (a line fitted over it refused requests an idle engine serves in time)."""

from __future__ import annotations

from collections.abc import Callable

from backends.open_stream import Failed, Finished
from backends.outliers import Outliers
from backends.outlook import Demand, cached_share, first_chunk_tokens
from backends.replica import Replica
from budgets.output_lengths import OutputLengths
from core.answers import StreamChunk, Usage
from core.errors import DeadlineExceeded


class Learning:
    """Hears the ends of calls for the fleet."""

    __slots__ = ("_lengths", "outliers")

    def __init__(self, outliers: Outliers, lengths: Callable[[str], OutputLengths]) -> None:
        self.outliers = outliers
        self._lengths = lengths

    def answered(
        self,
        replica: Replica,
        demand: Demand,
        usage: Usage,
        seconds: float,
        engine_room: bool = True,
    ) -> None:
        """A request ended cleanly `seconds` after admission: teach the replica's estimate
        (when it started at once, `engine_room`) and cached share, and the model's output
        lengths when the request set no cap."""
        tokens = demand.output_tokens(usage)
        if tokens < 1:
            return
        share = cached_share(usage)
        replica.heard_cached(share)
        if engine_room:
            replica.uncached_estimate.observe(demand.uncached_part(share), tokens, seconds)
        else:
            replica.uncached_estimate.heard_of()
        if demand.max_tokens is None:
            self._lengths(replica.model).add(tokens)

    def ran_out(
        self,
        replica: Replica,
        demand: Demand,
        seconds: float,
        engine_room: bool = True,
        produced: int | None = None,
    ) -> None:
        """A call failed for lack of time `seconds` after admission, having `produced` output
        tokens (all choices together; None: unknown): the next token had not come. Without
        that count, a capped call's cap had not come; an uncapped call teaches nothing, since
        the length it was judged by may be why it ran out (answers grew longer), not its
        replica's speed."""
        if not engine_room:
            replica.uncached_estimate.heard_of()
            return
        tokens = _next_token(demand, produced)
        uncapped = demand.max_tokens is None
        if uncapped and produced is None:
            self._lengths(replica.model).uncounted()  # the next ones are counted
        if tokens is None:
            return
        if uncapped and produced is not None:
            self._lengths(replica.model).at_least(tokens)
        prompt = demand.uncached_part(replica.recent_cached_share or 0.0)
        replica.uncached_estimate.observe(prompt, tokens, seconds, at_least=True)

    def stream_end(
        self,
        replica: Replica,
        demand: Demand,
        first: StreamChunk | None,
        first_s: float,
        started: float,
        clock: Callable[[], float],
        engine_room: bool = True,
    ) -> tuple[Finished, Failed]:
        """How a stream's end is heard. Only a stream that ended cleanly teaches the estimate,
        its first token and its end together: a stream that breaks after a fast first token
        is no evidence of fast service (a replica breaking every stream would look fastest).
        One that ran out of time teaches that its answer had not come by then."""

        def finished(usage: Usage) -> None:
            self.outliers.succeeded(replica)
            if first is not None and engine_room:
                tokens = first_chunk_tokens(first)
                replica.uncached_estimate.observe(demand.uncached_tokens(usage), tokens, first_s)
            self.answered(replica, demand, usage, clock() - started, engine_room)

        def failed(exc: BaseException) -> None:
            self.outliers.failed(replica, exc)
            if isinstance(exc, DeadlineExceeded):
                self.ran_out(replica, demand, clock() - started, engine_room, exc.produced)

        return finished, failed


def _next_token(demand: Demand, produced: int | None) -> int | None:
    """Which output token (per choice) of a call that ran out had surely not come: the one
    after those `produced`, else its cap; None: unknown (several choices share the count, or
    an uncapped call's count is unknown, or every token came and only the end had not)."""
    cap = demand.max_tokens
    if produced is not None and (produced == 0 or demand.choices == 1):
        tokens = produced + 1
        return None if cap is not None and tokens > cap else tokens
    return cap
