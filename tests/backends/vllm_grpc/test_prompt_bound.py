"""The most characters one token stands for: a bound that holds for the texts tokenized, and
none where the tokenizer may drop characters or fold a run of them into one token."""

from __future__ import annotations

import math

from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

from backends.vllm_grpc.prompt_bound import max_chars_per_token
from standin.vllm.tokenizer_files import build_harmony_tokenizer, build_tokenizer


def test_the_bound_holds_for_the_stand_ins_tokenizer() -> None:
    """No text has fewer tokens than its length over the bound, whatever its characters."""
    tokenizer = build_harmony_tokenizer()
    bound = max_chars_per_token(tokenizer)
    assert bound is not None
    texts = [
        "a" * 5000,
        " " * 5000,
        "alpha river quantum " * 300,
        "é👨\u200d👩\u200d👧 日本語 " * 200,
        "<|start|><|end|><|message|>" * 100,
    ]
    for text in texts:
        ids = tokenizer.encode(text, add_special_tokens=False).ids
        assert len(ids) >= math.ceil(len(text) / bound), text[:20]


def test_a_byte_level_bound_is_its_longest_token() -> None:
    """A byte-level BPE without a normalizer: its longest vocabulary or added entry."""
    tokenizer = build_tokenizer()
    longest = max(len(token) for token in tokenizer.get_vocab(with_added_tokens=True))
    assert max_chars_per_token(tokenizer) == longest


def test_composing_normalizers_widen_the_bound() -> None:
    """NFC may compose several code points into one: the bound grows to cover that."""
    tokenizer = build_tokenizer()
    plain = max_chars_per_token(tokenizer)
    tokenizer.normalizer = normalizers.NFC()
    assert plain is not None and max_chars_per_token(tokenizer) == 4 * plain


def test_tokenizers_that_may_drop_or_fold_text_have_no_bound() -> None:
    """Whitespace splitting drops spaces, stripping drops text, WordPiece and a fused unknown
    token stand for a whole run: none of them has a bound."""
    dropping = build_tokenizer()
    dropping.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    stripping = build_tokenizer()
    stripping.normalizer = normalizers.Strip()
    word_piece = Tokenizer(models.WordPiece({"[UNK]": 0, "a": 1}, unk_token="[UNK]"))
    fused = Tokenizer(models.BPE({"<unk>": 0, "a": 1}, [], unk_token="<unk>", fuse_unk=True))
    for tokenizer in (dropping, stripping, word_piece, fused):
        assert max_chars_per_token(tokenizer) is None
