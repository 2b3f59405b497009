"""Defaults of the semantic cache, measured with `python -m bench.semantic_quality`."""

from __future__ import annotations

DEFAULT_SIMILARITY_THRESHOLD = 0.78
"""Minimum cosine similarity of L2-normalized all-MiniLM-L6-v2 embeddings for a stored prompt
to be a candidate (range [-1, 1], higher = more similar). Candidates must also pass the
verifier (`cache.verify`): by similarity alone half of the hard negatives score above it.

On tests/data/semantic_pairs.jsonl this is the lowest threshold (0.01 steps) whose false-hit
rate with the verifier stays at or below 1% (0.6%; hit rate 82%). Below it false hits climb
fast (2.6% at 0.75): raise it, never lower it, without re-running the benchmark."""

MAX_SEMANTIC_CHARS = 1000
"""Longer prompts skip the semantic cache (never looked up, never stored) unless
`GATEWAY_SEMANTIC_MAX_CHARS` says otherwise: the verifier's text checks cost CPU that grows
with the prompt, tens of milliseconds a candidate on long templated prompts."""


def looked_up(text: str, max_chars: int = MAX_SEMANTIC_CHARS) -> bool:
    """Whether the semantic stage looks up, and stores, a prompt of this (last message) text
    (`GATEWAY_SEMANTIC_MAX_CHARS`); `bench.semantic_scoring` counts the pairs it does not as
    never served."""
    return len(text) <= max_chars
