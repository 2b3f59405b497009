"""A token's raw bytes: joined over a text's tokens they are the text, also where a token
holds only part of a character, for byte-level and byte-fallback vocabularies."""

from __future__ import annotations

from tokenizers import Tokenizer, decoders, models

from backends.vllm_grpc.token_bytes import raw_bytes_reader
from standin.vllm.tokenizer_files import tokenizer_dir

TEXTS = ["world café new", "日本語のテキスト", "naïve über ☕ coffee"]


def test_byte_level_tokens_join_into_the_text() -> None:
    """GPT-2-style vocabularies: every token's bytes, split characters included."""
    tokenizer = Tokenizer.from_file(str(tokenizer_dir() / "tokenizer.json"))
    raw = raw_bytes_reader(tokenizer)
    for text in TEXTS:
        ids = tokenizer.encode(text, add_special_tokens=False).ids
        parts = [raw(token_id) for token_id in ids]
        assert b"".join(part or b"" for part in parts) == text.encode()
    end = tokenizer.token_to_id("<|im_end|>")
    assert end is not None and raw(end) is None  # an added token is its text


def test_byte_fallback_tokens_are_their_byte() -> None:
    """SentencePiece vocabularies: `<0xC3>` is one byte, "▁" a space."""
    vocab = {"<unk>": 0, "<0xC3>": 1, "<0xA9>": 2, "▁caf": 3, "▁new": 4}
    tokenizer = Tokenizer(models.BPE(vocab, [], unk_token="<unk>", byte_fallback=True))
    tokenizer.decoder = decoders.Sequence(
        [decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse()]
    )
    raw = raw_bytes_reader(tokenizer)
    assert b"".join(raw(i) or b"" for i in (3, 1, 2, 4)) == " café new".encode()


def test_other_vocabularies_say_nothing() -> None:
    """Without either decoder the caller falls back to the token's text."""
    tokenizer = Tokenizer(models.WordLevel({"a": 0, "<unk>": 1}, unk_token="<unk>"))
    assert raw_bytes_reader(tokenizer)(0) is None
