"""The words the embedding model knows whole: the vocabulary of all-MiniLM-L6-v2's tokenizer
(about 20,000 lowercase English words, names and pieces), read once from the model package.

The verifier uses it to tell a compound from a derived form: "buttermilk" is "butter" plus
the word "milk" (another thing), "introductory" is "intro" plus no word (the same root).
Without the package the set is empty, and a long shared start is never taken for a root.
"""

from __future__ import annotations

from functools import cache


@cache
def known_words() -> frozenset[str]:
    """Whole alphabetic entries of the model's vocabulary (no word pieces, no markers)."""
    try:
        from cache.embedder_base import default_model_path

        lines = (default_model_path() / "vocab.txt").read_text(encoding="utf-8").splitlines()
    except (ImportError, OSError):
        return frozenset()
    return frozenset(line for line in lines if line.isalpha() and line.islower())


def is_known(word: str) -> bool:
    """`word` is a whole word of the model's vocabulary."""
    return word in known_words()
