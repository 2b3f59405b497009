"""Incremental detokenization of one generated sequence, exact for multi-byte characters.

Built on `tokenizers.decoders.DecodeStream`, the same machinery vLLM's own (fast) detokenizer
uses, with vLLM's choices:

- The stream is primed with a short suffix of the prompt (4 to 23 tokens, the shortest that
  decodes without U+FFFD), so the first generated token keeps the leading space that
  SentencePiece-style decoders strip at the start of a text.
- `spaces_between_special_tokens=False` (with `skip_special_tokens=False`) writes an added token
  that follows another added token as its bare content. Fast tokenizers otherwise ignore that
  flag, as do HF's fast `decode` and vLLM; it only changes decoders that join tokens with
  spaces (WordPiece-like), never byte-level or byte-fallback ones.
- A "Invalid prefix" error from the stream (invalid UTF-8 out of some byte-fallback models)
  resets the stream and decodes the chunk afresh instead of failing the request.

Each `feed` is one `DecodeStream.step` over the whole chunk. Bytes of an unfinished character
are held until a later token completes it; `flush` releases them at the end (as U+FFFD, the
way `Tokenizer.decode` shows them). vLLM drops such a tail silently instead.
No text clean-up (`clean_up_tokenization_spaces`) is applied, like vLLM.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from tokenizers import Tokenizer
from tokenizers.decoders import DecodeStream

_INVALID_PREFIX = "Invalid prefix encountered"
_REPLACEMENT = "\ufffd"


def prompt_primer(tokenizer: Tokenizer, prompt_ids: Sequence[int]) -> list[int]:
    """vLLM's choice of prompt suffix to prime the stream with."""
    primer = list(prompt_ids)
    for size in range(4, min(len(primer) + 1, 24)):
        suffix = primer[-size:]
        if _REPLACEMENT not in tokenizer.decode(suffix, skip_special_tokens=False):
            return suffix
    return primer


class IncrementalDetokenizer:
    """Turns the token ids of one sequence, chunk by chunk, into new text."""

    __slots__ = (
        "_added",
        "_emitted",
        "_ids",
        "_last_added",
        "_pending",
        "_primer",
        "_primer_chars",
        "_skip",
        "_stream",
        "_tokenizer",
    )

    def __init__(
        self,
        tokenizer: Tokenizer,
        skip_special_tokens: bool = True,
        *,
        spaces_between_special_tokens: bool = True,
        prompt_ids: Sequence[int] = (),
        added_tokens: Mapping[int, str] | None = None,
    ) -> None:
        self._tokenizer = tokenizer
        self._skip = skip_special_tokens
        self._added: Mapping[int, str] | None = None
        if not skip_special_tokens and not spaces_between_special_tokens:
            if added_tokens is None:
                added_tokens = {
                    i: t.content for i, t in tokenizer.get_added_tokens_decoder().items()
                }
            self._added = added_tokens or None
        self._last_added = False
        self._start(prompt_primer(tokenizer, prompt_ids) if prompt_ids else [])

    def _start(self, primer: list[int]) -> None:
        self._stream = DecodeStream(skip_special_tokens=self._skip)
        self._primer = primer
        self._primer_chars = len(self._stream.step(self._tokenizer, primer) or "") if primer else 0
        self._ids: list[int] = []
        self._emitted = 0
        self._pending = False

    def feed(self, token_ids: Sequence[int]) -> str:
        """The text the new tokens complete ("" while a character is still partial)."""
        if not token_ids:
            return ""
        if self._added is not None and (
            self._last_added or any(t in self._added for t in token_ids)
        ):
            return "".join(self._step_one(token) for token in token_ids)
        # A bare int steps ~0.5 us faster than a one-element list (the common streaming case).
        return self._step(token_ids[0] if len(token_ids) == 1 else list(token_ids))

    def _step(self, ids: int | list[int]) -> str:
        try:
            text = self._stream.step(self._tokenizer, ids)
        except Exception as exc:
            if _INVALID_PREFIX not in str(exc):
                raise
            self._start([])
            text = self._stream.step(self._tokenizer, ids)
        if isinstance(ids, int):
            self._ids.append(ids)
        else:
            self._ids.extend(ids)
        self._pending = text is None
        if text is None:
            return ""
        self._emitted += len(text)
        return text

    def _step_one(self, token: int) -> str:
        text = self._step(token)
        assert self._added is not None
        content = self._added.get(token)
        if content is not None and self._last_added:
            text = content
        self._last_added = content is not None
        return text

    def flush(self) -> str:
        """Text still held back (bytes of an unfinished character), as `decode` shows it."""
        if not self._pending:
            return ""
        self._pending = False
        full = self._tokenizer.decode(self._primer + self._ids, skip_special_tokens=self._skip)
        rest = full[self._primer_chars + self._emitted :]
        self._emitted += len(rest)
        return rest
