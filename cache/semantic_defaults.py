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
"""Longer prompts skip the semantic cache: all-MiniLM-L6-v2 reads only the first 256 word
pieces (~1000 characters of English), so differences past that are invisible to it."""
