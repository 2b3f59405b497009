"""The seam between the pipeline and the protocols that reach a model server."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from budgets.deadline import Deadline
from core.answers import BackendHealth, Completion, Embeddings, Endpoint, StreamChunk
from core.protocol import ChatCompletionRequest, CompletionRequest, EmbeddingRequest


@dataclass(slots=True)
class GenerationRequest:
    """A validated chat or text completion on its way to a backend.

    `raw` is the client's JSON body, which pass-through backends forward unchanged.
    `headers` carries what must travel to the backend (trace context).
    """

    endpoint: Endpoint
    body: ChatCompletionRequest | CompletionRequest
    raw: bytes
    request_id: str
    headers: Mapping[str, str] = field(default_factory=dict)
    # The body's `max_tokens` is its key's cap, not the client's: a ceiling that the room the
    # context leaves lowers, as it bounds a request that names none, rather than a 400.
    max_tokens_from_key: bool = False
    # What a backend prepared (rendered, tokenized) to route the request by its prompt's
    # prefix; the replica chosen reuses it instead of preparing again.
    prepared: object | None = None
    # Told of each token of a whole answer, by backends that see them (`reports_progress`).
    progress: Progress | None = None


class Progress(Protocol):
    """Hears that tokens of a whole answer arrived (`budgets.progress_watch`)."""

    def tick(self, tokens: int) -> None: ...


@dataclass(slots=True)
class EmbeddingCall:
    """A validated embeddings request on its way to a backend."""

    body: EmbeddingRequest
    raw: bytes
    request_id: str
    headers: Mapping[str, str] = field(default_factory=dict)


@runtime_checkable
class GenerationProbe(Protocol):
    """A backend that can ask its replica for one token, to tell a hung engine (which may
    still pass its health check) from a slow one (`backends.hang_watch`)."""

    async def probe_generation(self, endpoint: Endpoint, timeout: float) -> bool:
        """Whether the replica answered a one-token request within `timeout`: an error it
        answered with counts (a broken engine is not a hung one); only silence does not.
        Never raises."""
        ...


def reports_progress(backend: Backend) -> bool:
    """Whether `backend.complete` ticks `request.progress` as tokens arrive, so the first-token
    and stall budgets can bound a whole answer as they bound a stream."""
    return getattr(backend, "reports_progress", False) is True


def can_report_progress(backend: Backend) -> bool:
    """Whether `backend.complete` ticks `request.progress` when a request brings one, though
    it does not watch every whole answer (`reports_progress`)."""
    return getattr(backend, "can_report_progress", False) is True


class Backend(Protocol):
    """One replica of one model, reached over one protocol.

    Errors are raised as `core.errors.GatewayError` subclasses: `BackendRejected`
    for requests the server refuses as invalid (never retried), `BackendError` for
    failures (retried on another replica while nothing has reached the client),
    `DeadlineExceeded` when the deadline fires.
    """

    url: str

    async def start(self) -> None:
        """Open connections and learn what the server serves; must not raise if it is down."""

    async def complete(self, request: GenerationRequest, deadline: Deadline) -> Completion:
        """Generate a whole answer."""
        ...

    def stream(
        self, request: GenerationRequest, deadline: Deadline
    ) -> AsyncGenerator[StreamChunk, None]:
        """Generate incrementally; the last chunk carries the usage. Closing the generator
        before it ends cancels the request upstream."""
        ...

    async def embed(self, request: EmbeddingCall, deadline: Deadline) -> Embeddings:
        """Embed each input."""
        ...

    async def health(self, timeout: float) -> BackendHealth:
        """Probe readiness and load; never raises."""
        ...

    async def aclose(self) -> None:
        """Release connections."""
