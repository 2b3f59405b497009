"""How an answer is shown to the client: the seam between the one pipeline and the APIs it
serves (chat and text completions here, the Responses API in `gateway.responses`)."""

from __future__ import annotations

import time
from typing import Protocol

from core.answers import Completion, Endpoint, StreamChunk
from core.errors import GatewayError
from gateway.render import ChunkRenderer, completion_body


class StreamRenderer(Protocol):
    """The SSE events of one streamed answer. Its end may wait (the Responses API stores
    the final response before the last event says whether it was stored)."""

    def render(self, chunk: StreamChunk) -> bytes: ...

    async def close(self) -> bytes:
        """The end of a stream that ended well."""
        ...

    async def fail(self, error: GatewayError) -> bytes:
        """The end of a stream that failed after its first byte."""
        ...


class Presentation(Protocol):
    """One request's answer as a JSON body or as a stream."""

    async def body(self, completion: Completion) -> bytes: ...

    def renderer(self) -> StreamRenderer: ...


class CompletionsPresentation:
    """Chat and text completions, as OpenAI's chat/completions and completions endpoints."""

    __slots__ = (
        "_endpoint",
        "_fingerprint",
        "_include_reasoning",
        "_include_usage",
        "_model",
        "_response_id",
    )

    def __init__(
        self,
        endpoint: Endpoint,
        request_id: str,
        model: str,
        fingerprint: str,
        include_usage: bool,
        include_reasoning: bool = True,
    ) -> None:
        self._endpoint = endpoint
        self._include_reasoning = include_reasoning
        self._response_id = ("chatcmpl-" if endpoint == "chat" else "cmpl-") + request_id
        self._model = model
        self._fingerprint = fingerprint
        self._include_usage = include_usage

    async def body(self, completion: Completion) -> bytes:
        return completion_body(
            self._endpoint,
            completion,
            response_id=self._response_id,
            created=int(time.time()),
            model=self._model,
            fingerprint=self._fingerprint,
            include_reasoning=self._include_reasoning,
        )

    def renderer(self) -> ChunkRenderer:
        return ChunkRenderer(
            self._endpoint,
            response_id=self._response_id,
            created=int(time.time()),
            model=self._model,
            fingerprint=self._fingerprint,
            include_usage=self._include_usage,
            include_reasoning=self._include_reasoning,
        )
