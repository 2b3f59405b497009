"""Backend-neutral request and response shapes that flow between the pipeline and backends."""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from typing import Any, Literal

Endpoint = Literal["chat", "completion"]
FinishReason = str  # "stop" | "length" | "abort" | "content_filter" | "tool_calls"


def new_call_id() -> str:
    """An OpenAI-style tool call id, unique to the answer it is in."""
    return "call_" + secrets.token_hex(12)


@dataclass(slots=True)
class Usage:
    """Token accounting for one request (all choices together)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    reasoning_tokens: int = 0  # of the completion tokens, those spent thinking

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(slots=True)
class ChoiceDelta:
    """New output of one choice: text, and when it ended, why.

    `logprobs` is already in the OpenAI shape of the endpoint asked for (chat:
    `{"content": [...]}`, completions: `{"tokens": [...], ...}`); `tool_calls` is an OpenAI
    delta list: whole calls (id, name, arguments) from the gateway's parsers, fragments from a
    pass-through backend; `reasoning` is thinking text, kept apart from the answer. `thought`,
    on a choice's last delta, says its output went into thinking (though perhaps none of it was
    text): an answer that then says nothing has null content, as one of calls alone.
    """

    index: int
    text: str = ""
    finish_reason: FinishReason | None = None
    logprobs: Any = None
    tool_calls: list[Any] | None = None
    token_count: int = 0
    reasoning: str = ""
    thought: bool = False


@dataclass(slots=True)
class StreamChunk:
    """One step of a stream: deltas for one or more choices, usage on the last.

    `prompt_tokens` are the prompt tokens this chunk is the first to report (a backend that
    knows them before the usage says so on its first chunk; one prompt of a batch each), so
    that a stream which breaks before its usage still accounts for its prompt.
    `system_fingerprint` is the one an upstream sent with it (None: it sent none); it holds
    for this chunk and those after it.
    """

    deltas: list[ChoiceDelta]
    usage: Usage | None = None
    prompt_tokens: int = 0
    system_fingerprint: str | None = None


def merge_chunks(chunks: list[StreamChunk]) -> StreamChunk:
    """Chunks that arrived together as one: their deltas in order (a choice may appear more
    than once), the last usage and fingerprint, and the prompt tokens they report."""
    usage = fingerprint = None
    for chunk in chunks:
        if chunk.usage is not None:
            usage = chunk.usage
        if chunk.system_fingerprint is not None:
            fingerprint = chunk.system_fingerprint
    deltas = [delta for chunk in chunks for delta in chunk.deltas]
    prompt_tokens = sum(chunk.prompt_tokens for chunk in chunks)
    return StreamChunk(deltas, usage, prompt_tokens, fingerprint)


@dataclass(slots=True)
class Choice:
    """One finished choice of a non-streaming answer."""

    index: int
    text: str
    finish_reason: FinishReason
    logprobs: Any = None
    tool_calls: list[Any] | None = None
    reasoning: str | None = None


@dataclass(slots=True)
class Completion:
    """A whole non-streaming answer."""

    choices: list[Choice]
    usage: Usage
    system_fingerprint: str | None = None


@dataclass(slots=True)
class Embeddings:
    """Vectors for each input, in input order."""

    vectors: list[list[float]]
    prompt_tokens: int


@dataclass(slots=True)
class BackendHealth:
    """What a health probe learned about one replica."""

    healthy: bool
    detail: str = ""
    running: int = 0
    waiting: int = 0
    kv_usage: float = 0.0
    capacity: int = 0  # requests the engine runs at once (vLLM max_num_seqs); 0 = unknown
    # No answer within the probe's deadline: a busy replica may miss one, unlike one found
    # down (refused, unreachable, not serving), so only several in a row eject it.
    missed: bool = False
    extra: dict[str, Any] = field(default_factory=dict)
