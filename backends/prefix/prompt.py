"""One request's prompt as prefix-aware routing sees it: its block keys per block size."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from backends.prefix.index import PrefixIndex


@dataclass(frozen=True, slots=True)
class PromptBlocks:
    """The keys of the prompt's full blocks, for each block size the replicas report."""

    keys: Mapping[int, Sequence[int]]

    def cached_share(self, index: PrefixIndex, now: float) -> float:
        """The fraction of the prompt's blocks `index` holds or expects at `now` as a leading
        run (0: none, or the replica reports no events)."""
        if not index.live:
            return 0.0
        keys = self.keys.get(index.block_size)
        if not keys:
            return 0.0
        return index.cached_blocks(keys, now) / len(keys)

    def sent_to(self, index: PrefixIndex, now: float) -> None:
        """The prompt was sent to the replica of `index` at `now`: expect its blocks there."""
        keys = self.keys.get(index.block_size)
        if keys and index.live:
            index.expect(keys, now)
