"""One choice of a whole answer gathered from its streamed chunks, to be decoded at once."""

from __future__ import annotations

from typing import Any

from smg_grpc_proto.generated import vllm_engine_pb2


class CollectedOutput:
    """The token ids and logprobs of one choice's chunks, in order. (The `complete` message
    of a stream repeats only the last chunk's ids: it is metadata.)"""

    __slots__ = ("logprobs", "prompt_logprobs", "token_ids")

    def __init__(self) -> None:
        self.token_ids: list[int] = []
        self.logprobs: Any = None
        self.prompt_logprobs: Any = None

    @classmethod
    def of_complete(cls, done: Any) -> CollectedOutput:
        """A choice that came whole in its `complete` (the engine asked not to stream)."""
        collected = cls()
        collected.token_ids = list(done.output_ids)
        if done.HasField("output_logprobs"):
            collected.logprobs = done.output_logprobs
        if done.HasField("input_logprobs"):
            collected.prompt_logprobs = done.input_logprobs
        return collected

    def add(self, chunk: Any) -> None:
        """One `GenerateStreamChunk` of this choice."""
        self.token_ids.extend(chunk.token_ids)
        if chunk.HasField("output_logprobs"):
            if self.logprobs is None:
                self.logprobs = vllm_engine_pb2.OutputLogProbs()
            self.logprobs.MergeFrom(chunk.output_logprobs)  # repeated fields concatenate
        if self.prompt_logprobs is None and chunk.HasField("input_logprobs"):
            self.prompt_logprobs = chunk.input_logprobs
