"""A streamed OpenAI answer's SSE events, one network read's worth at a time, as chunks: the
events of one read stay one chunk, an error event ends the stream, a choice says nothing
after its finish (an upstream that repeats its finish chunk is heard once), a character the
upstream cut between two events is put back together (`backends.split_text`), tool calls
are made canonical (`backends.upstream_calls`), and whether
all of the answer has come even if `[DONE]` never does."""

from __future__ import annotations

from backends import openai_decode as decode
from backends.split_text import Halves
from backends.sse_reader import ErrorEvent
from backends.upstream_calls import CallFragments
from core.answers import Endpoint, StreamChunk, merge_chunks
from core.errors import GatewayError

Read = tuple[StreamChunk | None, GatewayError | None, bool]
"""What one read's events come to: the chunk to pass on, the error that ends the stream,
and whether `[DONE]` ended it."""


class StreamEvents:
    """The events of one stream of `choices` choices, whose usage is part of the answer when
    `usage` says so (the client asked for it)."""

    __slots__ = (
        "_calls",
        "_choices",
        "_endpoint",
        "_finished",
        "_halves",
        "_usage",
        "_usage_heard",
    )

    def __init__(self, endpoint: Endpoint, choices: int = 1, usage: bool = False) -> None:
        self._endpoint = endpoint
        self._choices = choices
        self._usage = usage
        self._finished: set[int] = set()  # the choices whose finish has been passed on
        self._usage_heard = False
        self._halves = Halves()  # characters the upstream cut between two events
        self._calls = CallFragments()  # the tool calls streamed so far

    @property
    def whole(self) -> bool:
        """Every choice's finish has been passed on, and the usage if it is part of the answer:
        nothing the client expects is missing, `[DONE]` or not."""
        return len(self._finished) >= self._choices and (self._usage_heard or not self._usage)

    def read(self, events: list[bytes | ErrorEvent]) -> Read:
        """The events of one read; those after `[DONE]` or an error are not looked at."""
        ready: list[StreamChunk] = []
        failure: GatewayError | None = None
        done = False
        for payload in events:
            if payload == b"[DONE]":
                done = True
                break
            if isinstance(payload, ErrorEvent):
                failure = decode.typed_error_event(payload.data)
                break
            try:
                chunk = decode.stream_chunk(payload, self._endpoint, self._halves, self._calls)
            except GatewayError as exc:  # an error event: what came before it still goes
                failure = exc
                break
            if chunk is not None and (chunk := self._unfinished(chunk)) is not None:
                ready.append(chunk)
        # Events that arrived in one read leave in one write, each still its own SSE event
        # (the renderer makes one per delta).
        merged = (ready[0] if len(ready) == 1 else merge_chunks(ready)) if ready else None
        if merged is not None and merged.usage is not None:
            self._usage_heard = True
        return merged, failure, done

    def _unfinished(self, chunk: StreamChunk) -> StreamChunk | None:
        """The chunk less the deltas of choices that already finished; None if nothing is left."""
        finished = self._finished
        if finished and any(delta.index in finished for delta in chunk.deltas):
            deltas = [delta for delta in chunk.deltas if delta.index not in finished]
            if not deltas and chunk.usage is None:
                return None
            chunk = StreamChunk(deltas, chunk.usage, 0, chunk.system_fingerprint)
        for delta in chunk.deltas:
            if delta.finish_reason is not None:
                finished.add(delta.index)
        return chunk
