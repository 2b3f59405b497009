"""The stand-in "model": a pure function from (prompt ids, sampling spec, choice index) to output.

Output depends only on the prompt token ids, the seed (unset = 0) and the choice index, never
on timing, so tests anywhere can compute what the server will send (see
`served_model.expected_generation`).
"""

from __future__ import annotations

import hashlib
import json
import random
import struct
from array import array
from collections.abc import Sequence

from standin.vllm.logprobs import TokenLogprobs, token_logprobs
from standin.vllm.sampling import Generation, SamplingSpec
from standin.vllm.structured import answer_text
from standin.vllm.text_source import Content, FixedContent, TextContent, WordBook
from standin.vllm.tool_calls import tool_answer
from standin.vllm.vocab import IncrementalText, Vocabulary

THINK_OPEN, THINK_CLOSE = "<think>", "</think>"
HARMONY_START, HARMONY_CHANNEL = "<|start|>", "<|channel|>"
ASSISTANT_TURN = HARMONY_START + "assistant"  # where a Harmony prompt leaves the model
# Tokens of JSON punctuation around the words of a `json_object` answer.
_JSON_OVERHEAD_TOKENS = 9


def _seed_material(prompt_ids: Sequence[int], seed: int | None, index: int) -> bytes:
    digest = hashlib.blake2b(digest_size=16)
    digest.update(array("I", prompt_ids).tobytes())
    digest.update(struct.pack("<qI", 0 if seed is None else seed, index))
    return digest.digest()


class SimModel:
    """The generator bound to one vocabulary."""

    def __init__(self, vocab: Vocabulary) -> None:
        self.vocab = vocab
        self.book = WordBook(vocab)
        # A gpt-oss-like model: Harmony's markers are special tokens of its tokenizer.
        self.harmony = vocab.pieces.get(HARMONY_CHANNEL) in vocab.special_ids
        # Stop tokens besides EOS (generation_config.json), such as Harmony's `<|call|>`: like
        # stop_token_ids, they end the output where the model writes them.
        self.end_ids = _generation_eos_ids(vocab) - {vocab.eos_id}

    def generate_all(
        self,
        prompt_ids: Sequence[int],
        spec: SamplingSpec,
        *,
        output_tokens: int,
        max_context_length: int,
        tool_format: str = "hermes",
        reasoning: bool = False,
    ) -> list[Generation]:
        """Every choice of a request (n of them), in index order."""
        return [
            self.generate(
                prompt_ids,
                spec,
                index,
                output_tokens=output_tokens,
                max_context_length=max_context_length,
                tool_format=tool_format,
                reasoning=reasoning,
            )
            for index in range(spec.n)
        ]

    def generate(
        self,
        prompt_ids: Sequence[int],
        spec: SamplingSpec,
        index: int = 0,
        *,
        output_tokens: int,
        max_context_length: int,
        tool_format: str = "hermes",
        reasoning: bool = False,
    ) -> Generation:
        """Choice `index` of a request; the prompt is assumed valid (see `params`). A prompt
        offering tools gets calls written in `tool_format` (see `tool_calls`); a thinking
        model (`reasoning`) thinks first unless the prompt closed its think block; a Harmony
        model answers in Harmony's messages whatever the two say."""
        material = _seed_material(prompt_ids, spec.seed, index)
        rng = random.Random(material)
        if self.harmony:
            content = self._harmony(prompt_ids, spec, rng, output_tokens)
        else:
            content = self._tool_call(prompt_ids, spec, rng, tool_format) or self._content(
                spec, rng, output_tokens
            )
        if reasoning and spec.constraint is None and not self.harmony:
            content = self._thinking_first(prompt_ids, content, rng, output_tokens)
        room = max_context_length - len(prompt_ids)
        limit = room if spec.max_tokens is None else min(spec.max_tokens, room)
        gen = self._run(content, spec, index, limit)
        if spec.logprobs is not None:
            lp_rng = random.Random(material + b"logprobs")
            logprobs = token_logprobs(gen.token_ids, spec.logprobs, self.vocab.vocab_size, lp_rng)
            gen = Generation(
                gen.index,
                gen.token_ids,
                gen.finish_reason,
                gen.matched_token_id,
                gen.matched_stop_str,
                gen.text,
                logprobs,
            )
        return gen

    def prompt_logprobs(self, prompt_ids: Sequence[int], spec: SamplingSpec) -> TokenLogprobs:
        """Logprobs of the prompt tokens (`prompt_logprobs`); position 0 carries none."""
        rng = random.Random(_seed_material(prompt_ids, spec.seed, 0) + b"prompt")
        return token_logprobs(prompt_ids, spec.prompt_logprobs or 0, self.vocab.vocab_size, rng)

    def _content(self, spec: SamplingSpec, rng: random.Random, output_tokens: int) -> Content:
        if spec.constraint is None:
            return TextContent(self.book, rng, output_tokens)

        def words(count: int) -> list[str]:
            return self.book.pick_words(rng, count)

        budget = output_tokens - _JSON_OVERHEAD_TOKENS
        text = answer_text(spec.constraint, rng, words, budget)
        return FixedContent(self.vocab.encode(text), self.book.space_id)

    def _tool_call(
        self, prompt_ids: Sequence[int], spec: SamplingSpec, rng: random.Random, tool_format: str
    ) -> Content | None:
        """Calls to the tools the prompt offers, unless a tool just answered (or the
        conversation asks for words only)."""
        text = self._tool_text(prompt_ids, spec, rng, tool_format)
        return None if text is None else FixedContent(self.vocab.encode(text), self.book.space_id)

    def _tool_text(
        self, prompt_ids: Sequence[int], spec: SamplingSpec, rng: random.Random, tool_format: str
    ) -> str | None:
        if spec.constraint is not None:
            return None

        def words(count: int) -> list[str]:
            return self.book.pick_words(rng, count)

        # Read with its special tokens, which mark the turns (`tool_calls.turns`).
        prompt = self.vocab.tokenizer.decode(list(prompt_ids), skip_special_tokens=False)
        return tool_answer(prompt, tool_format, rng, words)

    def _harmony(
        self, prompt_ids: Sequence[int], spec: SamplingSpec, rng: random.Random, length: int
    ) -> Content:
        """gpt-oss's messages: thinking on the analysis channel, then calls to the offered
        tools (after a preamble when the scenario has words first), which stop at the first
        `<|call|>`, or, when a tool just answered or none is offered, the answer on the final
        channel, which EOS (`<|return|>`) ends."""
        calls = self._tool_text(prompt_ids, spec, rng, "harmony")
        thought = " ".join(self.book.pick_words(rng, max(1, length // 2)))
        head = f"{HARMONY_CHANNEL}analysis<|message|>{thought}<|end|>"
        if calls is not None:
            preamble, start, markup = calls.partition(HARMONY_START)
            if preamble.strip():
                head += f"{ASSISTANT_TURN}{HARMONY_CHANNEL}commentary<|message|>"
                head += f"{preamble.strip()}<|end|>"
            return FixedContent(self.vocab.encode(head + start + markup), self.book.space_id)
        content = self._content(spec, rng, length)
        content.ensure(content.natural)
        ids = self.vocab.encode(f"{head}{ASSISTANT_TURN}{HARMONY_CHANNEL}final<|message|>")
        return FixedContent(ids + content.ids[: content.natural], self.book.space_id)

    def _thinking_first(
        self, prompt_ids: Sequence[int], content: Content, rng: random.Random, length: int
    ) -> Content:
        """`<think>` words `</think>`, then the answer (words or calls), as Qwen3 writes it."""
        if self.vocab.decode(list(prompt_ids)).rstrip().endswith(THINK_CLOSE):
            return content  # the template closed an empty think block: no thinking
        content.ensure(content.natural)
        thought = " ".join(self.book.pick_words(rng, max(1, length // 2)))
        ids = self.vocab.encode(f"{THINK_OPEN}\n{thought}\n{THINK_CLOSE}\n\n")
        return FixedContent(ids + content.ids[: content.natural], self.book.space_id)

    def _substitute(self, stop_ids: frozenset[int]) -> int:
        """A token to write where a stop token is masked (before `min_tokens`)."""
        for word in self.book.words:
            for token_id in (*word.spaced.canonical, self.book.filler_id):
                if token_id not in stop_ids:
                    return token_id
        return self.book.filler_id

    def _run(self, content: Content, spec: SamplingSpec, index: int, limit: int) -> Generation:
        eos_id = self.vocab.eos_id
        eos_at = max(content.natural, spec.min_tokens)
        stop_ids = frozenset(spec.stop_token_ids) | self.end_ids
        detok = IncrementalText(self.vocab) if spec.stop else None
        max_stop = max((len(stop) for stop in spec.stop), default=0)
        window = ""
        total_chars = 0
        out: list[int] = []
        needed = limit if spec.ignore_eos else min(limit, eos_at)
        ids = content.ids
        for step in range(limit):
            if step >= eos_at and not spec.ignore_eos:
                out.append(eos_id)
                return self._finish(out, index, "stop", matched_token_id=eos_id)
            if step >= len(ids):
                # Grown in batches: an ignore_eos request may end early on a stop string.
                content.ensure(min(needed, step + 256))
            token_id = ids[step]
            if token_id in stop_ids:
                if step < spec.min_tokens:
                    token_id = self._substitute(stop_ids)
                else:
                    out.append(token_id)
                    return self._finish(out, index, "stop", matched_token_id=token_id)
            out.append(token_id)
            if detok is None:
                continue
            new = detok.push(token_id)
            if not new:
                continue
            total_chars += len(new)
            window = (window + new)[-(max_stop - 1 + len(new)) :]
            if len(out) <= spec.min_tokens:
                continue
            for stop in spec.stop:
                found = window.find(stop, max(0, len(window) - len(new) - len(stop) + 1))
                if found != -1:
                    cut = total_chars - len(window) + found
                    if spec.include_stop_str_in_output:
                        cut += len(stop)
                    return self._finish(out, index, "stop", matched_stop_str=stop, cut=cut)
        return self._finish(out, index, "length")

    def _finish(
        self,
        out: list[int],
        index: int,
        reason: str,
        *,
        matched_token_id: int | None = None,
        matched_stop_str: str | None = None,
        cut: int | None = None,
    ) -> Generation:
        text = self.vocab.decode(out)
        if cut is not None:
            text = text[:cut]
        return Generation(index, tuple(out), reason, matched_token_id, matched_stop_str, text)


def _generation_eos_ids(vocab: Vocabulary) -> frozenset[int]:
    """The EOS ids generation_config.json names, where the tokenizer directory has one."""
    path = vocab.directory / "generation_config.json"
    ids = json.loads(path.read_text()).get("eos_token_id") if path.is_file() else None
    if isinstance(ids, int):
        ids = [ids]
    return frozenset(i for i in ids or () if isinstance(i, int))
