"""The raw bytes a token stands for, which its decoded text loses when it holds only part of a
character ("é" split over two tokens decodes to U+FFFD twice).

Byte-level BPE vocabularies (GPT-2, Llama 3, Qwen, ...) spell each byte as one printable
character, so a token's bytes are its vocabulary entry mapped back byte by byte;
SentencePiece vocabularies with byte fallback (Llama 2, Mistral) hold a lone byte as
`<0xE2>` and a space as "▁". Added tokens, and other vocabularies, are their text.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

import orjson
from tokenizers import Tokenizer

_BYTE_TOKEN = re.compile(r"<0x([0-9A-Fa-f]{2})>")


@functools.cache
def _byte_of_char() -> dict[str, int]:
    """GPT-2's table, reversed: the printable character that stands for each byte."""
    printable = [*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAC + 1), *range(0xAE, 0xFF + 1)]
    chars, extra = {}, 0
    for byte in range(256):
        if byte in printable:
            chars[chr(byte)] = byte
        else:
            chars[chr(256 + extra)] = byte
            extra += 1
    return chars


def raw_bytes_reader(tokenizer: Tokenizer) -> Callable[[int], bytes | None]:
    """A function from token id to its bytes; None where the vocabulary does not say (the
    caller then encodes the token's text)."""
    added = set(tokenizer.get_added_tokens_decoder())
    decoder = orjson.loads(tokenizer.to_str()).get("decoder") or {}
    kinds = {decoder.get("type"), *(step.get("type") for step in decoder.get("decoders") or ())}

    if "ByteLevel" in kinds:
        table = _byte_of_char()

        def byte_level(token_id: int) -> bytes | None:
            piece = tokenizer.id_to_token(token_id)
            if token_id in added or piece is None or any(c not in table for c in piece):
                return None
            return bytes(table[c] for c in piece)

        return byte_level
    if "ByteFallback" in kinds:

        def byte_fallback(token_id: int) -> bytes | None:
            piece = tokenizer.id_to_token(token_id)
            if token_id in added or piece is None:
                return None
            match = _BYTE_TOKEN.fullmatch(piece)
            return bytes([int(match[1], 16)]) if match else piece.replace("▁", " ").encode()

        return byte_fallback
    return lambda token_id: None
