"""The per-replica index of KV-cache blocks, re-keyed from token ids, and its prompt keys."""

from __future__ import annotations

from backends.prefix.blocks import block_keys
from backends.prefix.index import PrefixIndex, StoredBlock
from backends.prefix.prompt import PromptBlocks

PROMPT = list(range(100, 150))  # 3 full blocks of 16 and 2 tokens over


def _stored(index: PrefixIndex, ids: list[int], size: int = 16, base: int = 1000) -> None:
    blocks = [
        StoredBlock(base + i, tuple(ids[i * size : (i + 1) * size]))
        for i in range(len(ids) // size)
    ]
    index.stored(None, blocks)


def test_block_keys_cover_full_blocks_only() -> None:
    """A partial last block gets no key; keys chain so a shared prefix shares keys."""
    keys = block_keys(PROMPT, 16)
    other = block_keys([*PROMPT[:32], 7, *PROMPT[33:]], 16)
    assert len(keys) == 3
    assert other[:2] == keys[:2] and other[2] != keys[2]


def test_index_counts_leading_blocks() -> None:
    """The index holds the leading blocks the events stored and stops at the first miss."""
    index = PrefixIndex()
    _stored(index, PROMPT[:32])
    assert index.block_size == 16
    assert index.cached_blocks(block_keys(PROMPT, 16)) == 2


def test_child_event_links_to_parent_by_engine_hash() -> None:
    """A later event naming its parent's engine hash continues that chain."""
    index = PrefixIndex()
    _stored(index, PROMPT[:16])
    index.stored(1000, [StoredBlock(2000, tuple(PROMPT[16:32]))])
    assert index.cached_blocks(block_keys(PROMPT, 16)) == 2


def test_unknown_parent_is_skipped() -> None:
    """Blocks whose parent the index never saw cannot be keyed and are left out."""
    index = PrefixIndex()
    index.stored(999, [StoredBlock(2000, tuple(PROMPT[16:32]))])
    assert len(index) == 0


def test_removed_and_cleared_forget_blocks() -> None:
    """BlockRemoved drops a block (the chain stops there); clear drops everything."""
    index = PrefixIndex()
    _stored(index, PROMPT[:48])
    index.removed([1001])
    assert index.cached_blocks(block_keys(PROMPT, 16)) == 1
    index.clear()
    assert index.cached_blocks(block_keys(PROMPT, 16)) == 0


def test_duplicate_copies_are_reference_counted() -> None:
    """Two engine blocks with the same content keep the key until both are removed."""
    index = PrefixIndex()
    _stored(index, PROMPT[:16], base=1)
    _stored(index, PROMPT[:16], base=2)
    index.removed([1])
    assert index.cached_blocks(block_keys(PROMPT, 16)) == 1
    index.removed([2])
    assert index.cached_blocks(block_keys(PROMPT, 16)) == 0


def test_cached_share_needs_a_live_index() -> None:
    """The share is cached blocks over prompt blocks, and 0 for a replica without events."""
    index = PrefixIndex()
    _stored(index, PROMPT[:16])
    blocks = PromptBlocks({16: block_keys(PROMPT, 16)})
    assert blocks.cached_share(index, 0.0) == 0.0
    index.live = True
    assert blocks.cached_share(index, 0.0) == 1 / 3


def test_expected_blocks_count_with_a_time_until_confirmed() -> None:
    """A prompt sent to the replica counts as held at a time within its window; its stored
    event confirms it, and a later removal then forgets it."""
    index = PrefixIndex()
    keys = block_keys(PROMPT, 16)
    index.expect(keys[:2], now=0.0)
    assert index.cached_blocks(keys) == 0
    assert index.cached_blocks(keys, now=1.0) == 2
    _stored(index, PROMPT[:32])
    assert len(index.expected) == 0
    index.removed([1001])
    assert index.cached_blocks(keys, now=1.0) == 1


def test_sent_to_expects_the_prompt_on_a_live_index_only() -> None:
    """A prompt's blocks are expected on a replica whose events are followed, at its size."""
    index = PrefixIndex()
    index.block_size = 16
    blocks = PromptBlocks({16: block_keys(PROMPT, 16)})
    blocks.sent_to(index, 0.0)
    assert len(index.expected) == 0
    index.live = True
    assert index.ready
    blocks.sent_to(index, 0.0)
    assert blocks.cached_share(index, 1.0) == 1.0
    assert blocks.cached_share(index, 2 * index.expected.window_s) == 0.0
