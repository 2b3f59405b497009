"""What the fleet learns from how a call on a replica ended: a clean end teaches the replica's
service estimate (over the uncached part of prompts, for routing and admission alike), how
much of its prompts its cache served, and the model's output lengths, and clears its
failures; a failure counts against it (`backends.outliers`) and teaches nothing."""

from __future__ import annotations

from collections.abc import Callable

from backends.open_stream import Failed, Finished
from backends.outliers import Outliers
from backends.outlook import Demand, cached_share, first_chunk_tokens
from backends.replica import Replica
from budgets.recent import RecentQuantile
from core.answers import StreamChunk, Usage


class Learning:
    """Hears the ends of calls for the fleet."""

    __slots__ = ("_lengths", "outliers")

    def __init__(self, outliers: Outliers, lengths: Callable[[str], RecentQuantile]) -> None:
        self.outliers = outliers
        self._lengths = lengths

    def answered(self, replica: Replica, demand: Demand, usage: Usage, seconds: float) -> None:
        """A request ended cleanly `seconds` after admission: teach the replica's estimate and
        cached share, and the model's output lengths when the request set no cap."""
        tokens = demand.output_tokens(usage)
        if tokens < 1:
            return
        share = cached_share(usage)
        replica.heard_cached(share)
        replica.uncached_estimate.observe(demand.uncached_part(share), tokens, seconds)
        if demand.max_tokens is None:
            self._lengths(replica.model).add(tokens)

    def stream_end(
        self,
        replica: Replica,
        demand: Demand,
        first: StreamChunk | None,
        first_s: float,
        started: float,
        clock: Callable[[], float],
    ) -> tuple[Finished, Failed]:
        """How a stream's end is heard. Only a stream that ended cleanly teaches the estimate,
        its first token and its end together: a stream that breaks after a fast first token
        is no evidence of fast service (a replica breaking every stream would look fastest)."""

        def finished(usage: Usage) -> None:
            self.outliers.succeeded(replica)
            if first is not None:
                tokens = first_chunk_tokens(first)
                replica.uncached_estimate.observe(demand.uncached_tokens(usage), tokens, first_s)
            self.answered(replica, demand, usage, clock() - started)

        def failed(exc: BaseException) -> None:
            self.outliers.failed(replica, exc)

        return finished, failed
