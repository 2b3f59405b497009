"""Tests for cache.verify_vocab: the words the embedding model knows whole."""

from __future__ import annotations

from cache.verify_vocab import is_known, known_words


def test_whole_lowercase_words_only() -> None:
    """Words are known; word pieces, markers and capitalized entries are not."""
    assert is_known("milk") and is_known("receive")
    assert not is_known("recieve")
    assert all(word.isalpha() and word.islower() for word in known_words())
    assert len(known_words()) > 10_000
