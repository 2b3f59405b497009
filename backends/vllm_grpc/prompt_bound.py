"""The most characters of input text one token of a tokenizer can stand for, read from its
`tokenizer.json`: a text longer than that times the model's context cannot fit it, and is
refused without being tokenized (which costs memory in proportion to the text, not to the
context). None where no such bound holds: a normalizer or pre-tokenizer that may drop
characters, or a model whose unknown-token can swallow a whole run of them."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from tokenizers import Tokenizer

# Unicode composition (NFC, NFKC) turns at most this many code points into one.
_COMPOSITION = 4
# Normalizers that never shorten a text, and those that shorten it by composition only.
_KEEPING_NORMALIZERS = frozenset({"NFD", "NFKD", "Lowercase", "Prepend"})
_COMPOSING_NORMALIZERS = frozenset({"NFC", "NFKC"})
# Pre-tokenizers that split (or mark) a text without dropping any of it.
_KEEPING_PRE_TOKENIZERS = frozenset(
    {"ByteLevel", "Metaspace", "Digits", "Punctuation", "UnicodeScripts"}
)


def max_chars_per_token(tokenizer: Tokenizer) -> int | None:
    """A safe bound on the characters of text one token of `tokenizer` covers, or None."""
    spec = json.loads(tokenizer.to_str())
    shrink = _normalizer_shrink(spec.get("normalizer"))
    if shrink is None or not _pre_tokenizer_keeps(spec.get("pre_tokenizer")):
        return None
    longest = _longest_model_token(spec.get("model") or {})
    if longest is None:
        return None
    for added in spec.get("added_tokens") or ():
        longest = max(longest, len(str(added.get("content", ""))))
    return max(1, longest) * shrink


def _normalizer_shrink(spec: Mapping[str, Any] | None) -> int | None:
    """How many characters of input at most become one after normalizing (None: unbounded)."""
    if spec is None:
        return 1
    kind = spec.get("type")
    if kind in _KEEPING_NORMALIZERS:
        return 1
    if kind in _COMPOSING_NORMALIZERS:
        return _COMPOSITION
    if kind == "Replace":
        pattern, content = spec.get("pattern") or {}, str(spec.get("content", ""))
        if "String" not in pattern or not content:
            return None  # a regex may match any length; an empty content deletes
        return max(1, math.ceil(len(str(pattern["String"])) / len(content)))
    if kind == "Sequence":
        total = 1
        for part in spec.get("normalizers") or ():
            shrink = _normalizer_shrink(part)
            if shrink is None:
                return None
            total *= shrink
        return total
    return None  # Strip, StripAccents, BertNormalizer, Precompiled, ...: may drop characters


def _pre_tokenizer_keeps(spec: Mapping[str, Any] | None) -> bool:
    if spec is None:
        return True
    kind = spec.get("type")
    if kind == "Sequence":
        return all(_pre_tokenizer_keeps(part) for part in spec.get("pretokenizers") or ())
    if kind == "Split":
        return spec.get("behavior") != "Removed"
    if kind == "Punctuation":
        return bool(spec.get("behavior", "Isolated") != "Removed")
    return kind in _KEEPING_PRE_TOKENIZERS


def _longest_model_token(spec: Mapping[str, Any]) -> int | None:
    """The longest vocabulary entry in characters (byte-level entries spell one character per
    byte, so never fewer than the text they cover), or None where an unknown-token may stand
    for any number of characters."""
    kind = spec.get("type")
    vocab = spec.get("vocab")
    if kind == "BPE" and isinstance(vocab, Mapping):
        if (
            spec.get("unk_token") is not None
            and spec.get("fuse_unk")
            and not spec.get("byte_fallback")
        ):
            return None  # a run of unknown characters fuses into one token
        return max(map(len, vocab), default=1)
    if kind == "Unigram" and isinstance(vocab, list) and spec.get("byte_fallback"):
        return max((len(str(entry[0])) for entry in vocab), default=1)
    return None  # WordPiece and WordLevel map a whole unknown word to one token
