"""One replica's KV-cache blocks as its event stream reports them, keyed the gateway's way
(`blocks.chain_key`), plus the blocks of prompts just sent to it (`expected`), answering how
many leading blocks of a prompt it holds."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from backends.prefix.blocks import ROOT, chain_key
from backends.prefix.expected import ExpectedBlocks

_NOTHING: tuple[frozenset[int], frozenset[int]] = (frozenset(), frozenset())


@dataclass(frozen=True, slots=True)
class StoredBlock:
    """One block of a `BlockStored` event: the engine's hash and the block's token ids."""

    engine_hash: int
    token_ids: tuple[int, ...]


class PrefixIndex:
    """Engine block hash -> gateway key, and how many live engine blocks hold each key.

    `live` is true while the gateway follows the replica's event stream: otherwise (a
    replica that publishes no events, or a stream down) routing treats the replica as unknown
    and falls back to load alone.
    """

    __slots__ = ("_keys", "_refs", "block_size", "expected", "live")

    def __init__(self) -> None:
        self._keys: dict[int, int] = {}  # engine hash -> key
        self._refs: dict[int, int] = {}  # key -> engine blocks holding it
        self.expected = ExpectedBlocks()
        self.block_size = 0
        self.live = False

    @property
    def ready(self) -> bool:
        """Whether routing can use the index: events followed, block size known."""
        return self.live and self.block_size > 0

    def __len__(self) -> int:
        return len(self._refs)

    def stored(self, parent_engine_hash: int | None, blocks: Sequence[StoredBlock]) -> None:
        """Blocks the engine cached, children of `parent_engine_hash` (None: the prompt's
        start). A parent the index never saw (evicted, or stored before we subscribed)
        leaves the chain unknown, so those blocks are skipped."""
        if parent_engine_hash is None:
            parent = ROOT
        else:
            known = self._keys.get(parent_engine_hash)
            if known is None:
                return
            parent = known
        for block in blocks:
            if self.block_size == 0:
                self.block_size = len(block.token_ids)
            if len(block.token_ids) != self.block_size:
                return  # a partial block is never shared; its children cannot be keyed
            parent = chain_key(parent, block.token_ids)
            if block.engine_hash in self._keys:
                continue
            self._keys[block.engine_hash] = parent
            self._refs[parent] = self._refs.get(parent, 0) + 1
            self.expected.confirm(parent)

    def removed(self, engine_hashes: Sequence[int]) -> None:
        """Blocks the engine evicted."""
        for engine_hash in engine_hashes:
            key = self._keys.pop(engine_hash, None)
            if key is None:
                continue
            left = self._refs[key] - 1
            if left:
                self._refs[key] = left
            else:
                del self._refs[key]

    def clear(self) -> None:
        """`AllBlocksCleared`, or the replica restarted: nothing is known to be cached."""
        self._keys.clear()
        self._refs.clear()
        self.expected.clear()

    def expect(self, keys: Sequence[int], now: float) -> None:
        """A prompt with these block keys was sent to the replica at `now`: its prefill will
        cache them (again, if they were evicted)."""
        self.expected.add(keys, now)

    def cached_blocks(self, keys: Sequence[int], now: float | None = None) -> int:
        """How many leading blocks of a prompt with these keys the replica holds; with
        `now`, blocks still expected at that time count as held."""
        refs = self._refs
        current, previous = self.expected.age(now) if now is not None else _NOTHING
        count = 0
        for key in keys:
            if key not in refs and key not in current and key not in previous:
                break
            count += 1
        return count
