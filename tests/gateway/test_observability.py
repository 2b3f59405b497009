"""Traces, metrics and the access log line of the in-process app, over a real uvicorn server.

The Observer reports a request after its last byte, so a client can hold the whole response
before its spans, samples and log line exist. Tests therefore wait on events: a span
processor wakes them whenever a span ends, and a handler on `gateway.access` whenever a
request's log line (the last thing `Observer.finish` does) is written.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import aiohttp
import orjson
import pytest
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from prometheus_client.parser import text_string_to_metric_families

from backends.base import GenerationRequest
from backends.replica import Replica
from budgets.deadline import Deadline
from budgets.priority import Priority
from budgets.request_budget import ClassBudgets
from budgets.settings import BudgetSettings
from cache.coalesce import SingleFlight, StreamFlight
from cache.semantic_defaults import DEFAULT_SIMILARITY_THRESHOLD
from cache.settings import CacheSettings
from core.answers import Completion, StreamChunk
from core.backend_errors import BackendError
from gateway.app import create_app
from gateway.settings import Settings
from obs.attributes import (
    ATTR_BUDGET_EXCEEDED,
    ATTR_CACHE_RESULT,
    ATTR_PRIORITY,
    ATTR_REPLICA,
    ATTR_REQUEST_ID,
    ATTR_SEMANTIC_SIMILARITY,
    ATTR_SEMANTIC_THRESHOLD,
    ATTR_SHED_REASON,
    ERROR_TYPE,
    EVENT_FIRST_TOKEN,
    GEN_AI_INPUT_MESSAGES,
    GEN_AI_OUTPUT_MESSAGES,
    GEN_AI_PROVIDER_NAME,
    GEN_AI_REQUEST_MODEL,
    GEN_AI_RESPONSE_FINISH_REASONS,
    GEN_AI_SYSTEM,
    GEN_AI_USAGE_INPUT_TOKENS,
    GEN_AI_USAGE_OUTPUT_TOKENS,
    HTTP_RESPONSE_STATUS_CODE,
    SERVER_ADDRESS,
    SERVER_PORT,
    SPAN_ADMISSION,
    SPAN_EMBED,
    SPAN_EXACT_CACHE,
    SPAN_PARSE,
    SPAN_SEARCH,
    SPAN_SEMANTIC_CACHE,
    SPAN_WRITEBACK,
    server_endpoint,
)
from obs.logs import ACCESS_LOGGER, JsonFormatter
from obs.tracing import Tracing
from tests.support.asgi_server import serving
from tests.support.fake_backend import FakeBackend

ROUTE = "/v1/chat/completions"
ROOT_NAME = f"POST {ROUTE}"
BACKEND_SPAN = "chat m"
REPLICA_URL = "fake://a"
CLIENT_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CLIENT_SPAN = "00f067aa0ba902b7"
TRACEPARENT = f"00-{CLIENT_TRACE}-{CLIENT_SPAN}-01"
TRACESTATE = "vendor=opaque"
# Distinctive texts, so that finding them anywhere in a span or log line means a leak.
PROMPT = "pelican ledger 7f3a: what is the capital of France"
ANSWER_WORDS = ["Quokka", " marmalade", " 91c2"]
SYSTEM = {"role": "system", "content": "You are a support assistant."}
WAIT_S = 10.0

T = TypeVar("T")
SHORT_TTFT = ClassBudgets(total_s=10.0, ttft_s=0.25, admission_s=0.2, stall_s=5.0)


# ---------------------------------------------------------------- test doubles and watchers


@dataclass
class RecordingBackend(FakeBackend):
    """A FakeBackend that keeps the headers each generation request carried."""

    seen_headers: list[Mapping[str, str]] = field(default_factory=list)

    async def complete(self, request: GenerationRequest, deadline: Deadline) -> Completion:
        self.seen_headers.append(dict(request.headers))
        return await super().complete(request, deadline)

    def stream(
        self, request: GenerationRequest, deadline: Deadline
    ) -> AsyncGenerator[StreamChunk, None]:
        self.seen_headers.append(dict(request.headers))
        return super().stream(request, deadline)


class SpanWatch(SpanProcessor):
    """Wakes waiting tests whenever a span ends; added after the exporter's processor, so
    the exporter already holds the span by then."""

    def __init__(self, exporter: InMemorySpanExporter) -> None:
        self._exporter = exporter
        self._changed = asyncio.Event()

    def on_end(self, span: ReadableSpan) -> None:
        self._changed.set()

    @property
    def spans(self) -> tuple[ReadableSpan, ...]:
        return self._exporter.get_finished_spans()

    async def wait_for(self, found: Callable[[Sequence[ReadableSpan]], T | None]) -> T:
        """The first non-None `found(spans)`, re-evaluated each time a span ends."""
        async with asyncio.timeout(WAIT_S):
            while True:
                self._changed.clear()
                result = found(self.spans)
                if result is not None:
                    return result
                await self._changed.wait()

    async def tree(self, request_id: str) -> SpanTree:
        """The request's tree, once its server span has ended (its stage spans end first)."""
        return await self.wait_for(lambda spans: _tree(spans, request_id))

    async def writebacks(self, request_id: str, count: int) -> list[ReadableSpan]:
        """The request's write-back spans, once `count` of them have ended."""

        def found(spans: Sequence[ReadableSpan]) -> list[ReadableSpan] | None:
            tree = _tree(spans, request_id)
            if tree is None:
                return None
            written = [span for span in tree.children if span.name == SPAN_WRITEBACK]
            return written if len(written) >= count else None

        return await self.wait_for(found)


@dataclass
class SpanTree:
    """A request's server span and the spans below it."""

    root: ReadableSpan
    spans: Sequence[ReadableSpan]

    def children_of(self, parent: ReadableSpan) -> list[ReadableSpan]:
        parent_id = _context(parent).span_id
        return [s for s in self.spans if s.parent is not None and s.parent.span_id == parent_id]

    @property
    def children(self) -> list[ReadableSpan]:
        return self.children_of(self.root)

    def child(self, name: str, parent: ReadableSpan | None = None) -> ReadableSpan:
        (found,) = [s for s in self.children_of(parent or self.root) if s.name == name]
        return found

    def names(self, parent: ReadableSpan | None = None) -> list[str]:
        return sorted(s.name for s in self.children_of(parent or self.root))


def _context(span: ReadableSpan) -> Any:
    context = span.get_span_context()
    assert context is not None
    return context


def _tree(spans: Sequence[ReadableSpan], request_id: str) -> SpanTree | None:
    roots = [
        s
        for s in spans
        if s.kind is SpanKind.SERVER and _attrs(s).get(ATTR_REQUEST_ID) == request_id
    ]
    if not roots:
        return None
    (root,) = roots
    trace_id = _context(root).trace_id
    return SpanTree(root, [s for s in spans if _context(s).trace_id == trace_id])


def _attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


class AccessLog(logging.Handler):
    """Keeps the `gateway.access` records and wakes waiting tests on each.

    Records arrive on the gateway's access-log writer thread, so waking the test's event
    loop goes through `call_soon_threadsafe`.
    """

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.records: list[logging.LogRecord] = []
        self._changed = asyncio.Event()
        self._loop: asyncio.AbstractEventLoop | None = None

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._changed.set)

    async def wait_count(self, count: int, *, api_only: bool = True) -> None:
        """Until `count` requests have been reported (each request logs exactly once), only
        those to the API (`/v1/...`) unless `api_only` is false (scrapes log lines too)."""
        self._loop = asyncio.get_running_loop()
        async with asyncio.timeout(WAIT_S):
            while len(self.api_records if api_only else self.records) < count:
                self._changed.clear()
                await self._changed.wait()

    @property
    def api_records(self) -> list[logging.LogRecord]:
        return [r for r in self.records if str(getattr(r, "route", "")).startswith("/v1/")]

    async def line(self, request_id: str) -> logging.LogRecord:
        """The one record of the request with id `request_id`, once it was written."""
        self._loop = asyncio.get_running_loop()
        async with asyncio.timeout(WAIT_S):
            while True:
                self._changed.clear()
                mine = [r for r in self.records if getattr(r, "request_id", None) == request_id]
                if mine:
                    (record,) = mine
                    return record
                await self._changed.wait()


@dataclass
class Reply:
    status: int
    headers: Mapping[str, str]
    body: bytes

    @property
    def request_id(self) -> str:
        return self.headers["x-request-id"]


@dataclass
class Gateway:
    """A served app: its base URL, its one scripted backend and what it reported."""

    url: str
    backend: RecordingBackend
    log: AccessLog
    watch: SpanWatch | None = None

    @property
    def spans(self) -> SpanWatch:
        assert self.watch is not None, "this gateway is not traced"
        return self.watch

    async def post(
        self,
        payload: dict[str, Any] | bytes,
        headers: Mapping[str, str] | None = None,
    ) -> Reply:
        data = payload if isinstance(payload, bytes) else orjson.dumps(payload)
        sent = {"content-type": "application/json", **(headers or {})}
        async with (
            aiohttp.ClientSession() as session,
            session.post(f"{self.url}{ROUTE}", data=data, headers=sent) as response,
        ):
            return Reply(response.status, response.headers, await response.read())

    async def metrics(self) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
        """GET /metrics, parsed: (sample name, labels) -> value."""
        async with (
            aiohttp.ClientSession() as session,
            session.get(f"{self.url}/metrics") as response,
        ):
            assert response.status == 200
            text = await response.text()
        return {
            (sample.name, frozenset(sample.labels.items())): sample.value
            for family in text_string_to_metric_families(text)
            for sample in family.samples
        }


def _chat(text: str = PROMPT, *, system: bool = False, **extra: Any) -> dict[str, Any]:
    messages = [SYSTEM] if system else []
    messages.append({"role": "user", "content": text})
    return {"model": "m", "messages": messages, **extra}


def _settings(
    cache: CacheSettings | None = None,
    classes: Mapping[Priority, ClassBudgets] | None = None,
    **budgets: Any,
) -> Settings:
    if classes is not None:
        budgets["classes"] = {**BudgetSettings().classes, **classes}
    return Settings(
        cache=cache or CacheSettings(),
        budgets=BudgetSettings(**budgets),
    )


def memory_tracing(record_content: bool = False) -> tuple[Tracing, SpanWatch]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    watch = SpanWatch(exporter)
    provider.add_span_processor(watch)
    return Tracing(provider, record_content=record_content), watch


@pytest.fixture
def access_log() -> Iterator[AccessLog]:
    logger = logging.getLogger(ACCESS_LOGGER)
    handler = AccessLog()
    level = logger.level
    logger.setLevel(logging.INFO)
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


@pytest.fixture
def backend() -> RecordingBackend:
    return RecordingBackend(url=REPLICA_URL, words=list(ANSWER_WORDS), hold=asyncio.Event())


async def _gateway(
    settings: Settings,
    backend: RecordingBackend,
    log: AccessLog,
    *,
    traced: bool = True,
    record_content: bool = False,
) -> AsyncIterator[Gateway]:
    tracing, watch = memory_tracing(record_content) if traced else (None, None)
    app = create_app(settings, [Replica("m", backend)], tracing)
    async with serving(app) as url:
        try:
            yield Gateway(url, backend, log, watch)
        finally:
            if backend.hold is not None:
                backend.hold.set()  # no request may outlive the server


@pytest.fixture
async def gw(backend: RecordingBackend, access_log: AccessLog) -> AsyncIterator[Gateway]:
    """A traced gateway with the default settings (in-process exact cache)."""
    async for served in _gateway(_settings(), backend, access_log):
        yield served


@pytest.fixture
async def one_slot(backend: RecordingBackend, access_log: AccessLog) -> AsyncIterator[Gateway]:
    """A traced gateway whose replica runs one request at a time and queues none."""
    async for served in _gateway(_settings(max_inflight=1, max_queue=0), backend, access_log):
        yield served


# ------------------------------------------------------------------------------ span trees


async def test_miss_span_tree(gw: Gateway) -> None:
    """A cache miss: server span over parse, exact cache, admission, the GenAI client span,
    and the write-back that follows."""
    reply = await gw.post(_chat(temperature=0))
    assert reply.status == 200 and reply.headers["x-cache"] == "miss"
    (writeback,) = await gw.spans.writebacks(reply.request_id, 1)
    assert _attrs(writeback)["gateway.writeback.result"] == "ok"
    tree = await gw.spans.tree(reply.request_id)

    root = tree.root
    assert root.name == ROOT_NAME and root.kind is SpanKind.SERVER
    assert root.parent is None
    assert root.status.status_code is StatusCode.UNSET
    attrs = _attrs(root)
    assert attrs[HTTP_RESPONSE_STATUS_CODE] == 200
    assert attrs[ATTR_CACHE_RESULT] == "miss"
    assert attrs[ATTR_REQUEST_ID] == reply.request_id
    assert attrs[ATTR_PRIORITY] == "interactive"
    assert attrs[GEN_AI_REQUEST_MODEL] == "m"
    assert attrs[GEN_AI_USAGE_INPUT_TOKENS] == 3
    assert attrs[GEN_AI_USAGE_OUTPUT_TOKENS] == len(ANSWER_WORDS)
    assert attrs[GEN_AI_RESPONSE_FINISH_REASONS] == ("stop",)

    assert tree.names() == sorted(
        [SPAN_PARSE, SPAN_EXACT_CACHE, SPAN_ADMISSION, BACKEND_SPAN, SPAN_WRITEBACK]
    )
    assert _attrs(tree.child(SPAN_ADMISSION))[ATTR_REPLICA] == REPLICA_URL
    backend = tree.child(BACKEND_SPAN)
    assert backend.kind is SpanKind.CLIENT
    backend_attrs = _attrs(backend)
    left_at_backend = backend_attrs.pop("gateway.budget.remaining_ms")
    assert 0 < attrs["gateway.budget.remaining_ms"] <= left_at_backend <= 300_000
    assert backend_attrs == {
        GEN_AI_REQUEST_MODEL: "m",
        ATTR_REPLICA: REPLICA_URL,
        GEN_AI_USAGE_INPUT_TOKENS: 3,
        GEN_AI_USAGE_OUTPUT_TOKENS: len(ANSWER_WORDS),
        GEN_AI_RESPONSE_FINISH_REASONS: ("stop",),
    }
    assert not backend.events  # no first token on a non-streamed answer
    for child in tree.children:
        assert child.kind is (SpanKind.CLIENT if child is backend else SpanKind.INTERNAL)
        # The write-back runs in the background and may outlast the request.
        assert child.name == SPAN_WRITEBACK or _in_order(root, child)


async def test_exact_hit_span_tree(gw: Gateway) -> None:
    """A repeated request is an exact hit: parse and exact-cache spans, no backend span."""
    first = await gw.post(_chat(temperature=0))
    await gw.spans.writebacks(first.request_id, 1)
    reply = await gw.post(_chat(temperature=0))
    assert reply.status == 200 and reply.headers["x-cache"] == "hit-exact"
    assert gw.backend.calls == 1

    tree = await gw.spans.tree(reply.request_id)
    assert tree.names() == sorted([SPAN_PARSE, SPAN_EXACT_CACHE])
    assert not [s for s in tree.spans if s.kind is SpanKind.CLIENT]
    attrs = _attrs(tree.root)
    assert attrs[ATTR_CACHE_RESULT] == "hit-exact"
    assert attrs[HTTP_RESPONSE_STATUS_CODE] == 200
    assert attrs[GEN_AI_USAGE_OUTPUT_TOKENS] == len(ANSWER_WORDS)
    assert ATTR_SEMANTIC_SIMILARITY not in attrs


async def test_stream_span_tree(gw: Gateway) -> None:
    """A stream: the client span carries the first-token event and ends with the stream;
    the server span has the output tokens."""
    reply = await gw.post(_chat(stream=True, stream_options={"include_usage": True}))
    assert reply.status == 200 and reply.body.endswith(b"data: [DONE]\n\n")
    tree = await gw.spans.tree(reply.request_id)

    assert tree.names() == sorted([SPAN_PARSE, SPAN_ADMISSION, BACKEND_SPAN])
    attrs = _attrs(tree.root)
    assert attrs[ATTR_CACHE_RESULT] == "bypass"  # no temperature 0: not cache-eligible
    assert attrs[GEN_AI_USAGE_OUTPUT_TOKENS] == len(ANSWER_WORDS)
    assert attrs[GEN_AI_USAGE_INPUT_TOKENS] == 3
    assert attrs[GEN_AI_RESPONSE_FINISH_REASONS] == ("stop",)

    backend = tree.child(BACKEND_SPAN)
    assert backend.kind is SpanKind.CLIENT
    assert _attrs(backend)[GEN_AI_USAGE_OUTPUT_TOKENS] == len(ANSWER_WORDS)
    (event,) = backend.events
    assert event.name == EVENT_FIRST_TOKEN
    assert backend.start_time is not None and backend.end_time is not None
    # The span runs from the call to the stream's end: the first token falls inside it.
    assert backend.start_time <= event.timestamp <= backend.end_time
    assert _in_order(tree.root, backend)


@pytest.mark.parametrize(
    ("url", "provider"),
    [("grpc://10.0.0.5:50051", "vllm"), ("http://10.0.0.6:8000/v1", "openai")],
)
async def test_client_span_names_the_provider_by_backend_kind(
    access_log: AccessLog, url: str, provider: str
) -> None:
    """The backend span's gen_ai.provider.name (and the deprecated gen_ai.system) says how
    the replica is reached: vLLM over gRPC, or an OpenAI-compatible HTTP server."""
    backend = RecordingBackend(url=url, words=list(ANSWER_WORDS))
    async for gw in _gateway(_settings(), backend, access_log):
        for payload in (_chat(), _chat(stream=True)):
            reply = await gw.post(payload)
            assert reply.status == 200
            attrs = _attrs((await gw.spans.tree(reply.request_id)).child(BACKEND_SPAN))
            assert attrs[GEN_AI_PROVIDER_NAME] == attrs[GEN_AI_SYSTEM] == provider
            assert attrs[ATTR_REPLICA] == url
            assert (attrs[SERVER_ADDRESS], attrs[SERVER_PORT]) == server_endpoint(url)


async def test_backend_error_marks_root_span_failed(gw: Gateway) -> None:
    """A backend failure (502) marks the server span as an error with the status code, and
    the backend call's span with the gateway's code for the failure."""
    gw.backend.fail_with = BackendError("boom")
    reply = await gw.post(_chat())
    assert reply.status == 502
    tree = await gw.spans.tree(reply.request_id)

    assert tree.root.status.status_code is StatusCode.ERROR
    attrs = _attrs(tree.root)
    assert attrs[HTTP_RESPONSE_STATUS_CODE] == 502
    assert attrs[ERROR_TYPE] == "502"
    backend = tree.child(BACKEND_SPAN)
    assert backend.kind is SpanKind.CLIENT
    assert backend.status.status_code is StatusCode.ERROR
    assert _attrs(backend)[ERROR_TYPE] == "backend_error"


async def test_first_token_deadline_marks_budget_exceeded(
    backend: RecordingBackend, access_log: AccessLog
) -> None:
    """A 504 from the first-token deadline names ttft in gateway.budget.exceeded."""
    settings = _settings(classes={"interactive": SHORT_TTFT}, parse_s=0.2, exact_cache_s=0.05)
    async for gw in _gateway(settings, backend, access_log):
        reply = await gw.post(_chat("hold the first token", stream=True))
        assert reply.status == 504
        tree = await gw.spans.tree(reply.request_id)
        assert tree.root.status.status_code is StatusCode.ERROR
        attrs = _attrs(tree.root)
        assert attrs[HTTP_RESPONSE_STATUS_CODE] == 504
        assert "ttft" in attrs[ATTR_BUDGET_EXCEEDED]
        assert backend.closed_early == 1


async def test_shed_request_names_reason(one_slot: Gateway) -> None:
    """A 429 from admission control carries gateway.shed.reason; a 4xx is not an error."""
    hold = one_slot.backend.hold
    assert hold is not None
    held = asyncio.create_task(one_slot.post(_chat("hold this slot")))
    await one_slot.backend.wait_held(1)
    reply = await one_slot.post(_chat())
    assert reply.status == 429
    hold.set()
    assert (await held).status == 200

    tree = await one_slot.spans.tree(reply.request_id)
    attrs = _attrs(tree.root)
    assert attrs[ATTR_SHED_REASON] == "overloaded"
    assert attrs[HTTP_RESPONSE_STATUS_CODE] == 429
    assert attrs[ATTR_PRIORITY] == "interactive"
    assert tree.root.status.status_code is StatusCode.UNSET
    assert tree.names() == sorted([SPAN_PARSE, SPAN_ADMISSION])


async def test_no_prompt_or_answer_text_in_spans(gw: Gateway) -> None:
    """By default neither the prompt nor the answer appears in any span."""
    replies = [
        await gw.post(_chat(temperature=0)),
        await gw.post(_chat(stream=True)),
        await gw.post(_chat(PROMPT + " again", temperature=0, stream=True)),
    ]
    assert [r.status for r in replies] == [200, 200, 200]
    for reply in replies:
        await gw.spans.tree(reply.request_id)
    await gw.spans.writebacks(replies[0].request_id, 1)

    spans = gw.spans.spans
    assert len(spans) >= 15
    text = repr([_span_text(span) for span in spans])
    assert "pelican" not in text and "Quokka" not in text and "marmalade" not in text
    assert not any(
        {GEN_AI_INPUT_MESSAGES, GEN_AI_OUTPUT_MESSAGES} & _attrs(span).keys() for span in spans
    )


async def test_content_on_spans_only_when_enabled(
    backend: RecordingBackend, access_log: AccessLog
) -> None:
    """GATEWAY_TRACE_CONTENT puts prompt and answer on the server span, never in the log."""
    async for gw in _gateway(_settings(), backend, access_log, record_content=True):
        replies = [await gw.post(_chat()), await gw.post(_chat(PROMPT + " streamed", stream=True))]
        assert [r.status for r in replies] == [200, 200]
        for reply in replies:
            root = (await gw.spans.tree(reply.request_id)).root
            attributes = _attrs(root)
            assert PROMPT in str(attributes[GEN_AI_INPUT_MESSAGES])
            assert attributes[GEN_AI_OUTPUT_MESSAGES] == "".join(ANSWER_WORDS)
            line = await access_log.line(reply.request_id)
            assert "pelican" not in repr(line.__dict__)


def _span_text(span: ReadableSpan) -> list[object]:
    """Everything a span carries that could hold text."""
    events = [(e.name, dict(e.attributes or {})) for e in span.events]
    links = [dict(link.attributes or {}) for link in span.links]
    return [span.name, _attrs(span), events, links, span.status.description]


def _in_order(parent: ReadableSpan, child: ReadableSpan) -> bool:
    """`child` lies within `parent` in time."""
    assert parent.start_time is not None and parent.end_time is not None
    assert child.start_time is not None and child.end_time is not None
    return parent.start_time <= child.start_time <= child.end_time <= parent.end_time


# ------------------------------------------------------------------------- semantic cache


@pytest.fixture
async def semantic_gw(
    backend: RecordingBackend, access_log: AccessLog, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Gateway]:
    """A traced gateway with the in-process semantic cache over the real MiniLM weights."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    cache = CacheSettings(semantic="on", semantic_timeout_s=WAIT_S)
    # Functional test: stage budgets generous enough for a cold model on a loaded machine.
    settings = _settings(cache, exact_cache_s=WAIT_S, semantic_cache_s=WAIT_S)
    async for served in _gateway(settings, backend, access_log):
        yield served


async def test_semantic_hit_span_tree(semantic_gw: Gateway) -> None:
    """A paraphrase is a semantic hit: the semantic span has embed and search children, and
    the server span carries the similarity and the threshold."""
    gw = semantic_gw
    first = await gw.post(_chat("How do I reset my password?", system=True, temperature=0))
    assert first.status == 200 and first.headers["x-cache"] == "miss"
    await gw.spans.writebacks(first.request_id, 2)  # exact entry and vector entry
    miss = await gw.spans.tree(first.request_id)
    assert miss.names() == sorted(
        [SPAN_PARSE, SPAN_EXACT_CACHE, SPAN_SEMANTIC_CACHE, SPAN_ADMISSION, BACKEND_SPAN]
        + [SPAN_WRITEBACK] * 2
    )
    assert miss.names(miss.child(SPAN_SEMANTIC_CACHE)) == [SPAN_EMBED, SPAN_SEARCH]
    assert ATTR_SEMANTIC_SIMILARITY not in _attrs(miss.root)

    reply = await gw.post(_chat("How can I reset my password?", system=True, temperature=0))
    assert reply.status == 200 and reply.headers["x-cache"] == "hit-semantic"
    assert gw.backend.calls == 1
    tree = await gw.spans.tree(reply.request_id)
    assert tree.names() == sorted([SPAN_PARSE, SPAN_EXACT_CACHE, SPAN_SEMANTIC_CACHE])
    semantic = tree.child(SPAN_SEMANTIC_CACHE)
    assert tree.names(semantic) == [SPAN_EMBED, SPAN_SEARCH]
    for child in tree.children_of(semantic):
        assert _in_order(semantic, child)
    attrs = _attrs(tree.root)
    assert attrs[ATTR_CACHE_RESULT] == "hit-semantic"
    assert attrs[ATTR_SEMANTIC_THRESHOLD] == DEFAULT_SIMILARITY_THRESHOLD
    assert DEFAULT_SIMILARITY_THRESHOLD <= attrs[ATTR_SEMANTIC_SIMILARITY] <= 1.0 + 1e-6
    assert not [s for s in tree.spans if s.kind is SpanKind.CLIENT]


async def test_semantic_encoders_are_sampled_into_metrics(semantic_gw: Gateway) -> None:
    """Both encoders of the semantic cache (the embedding model and the clause judge) get
    their series, and a lookup's embedding is counted."""
    gw = semantic_gw
    reply = await gw.post(_chat("Which plants grow well in shade?", system=True, temperature=0))
    assert reply.status == 200

    def counted(samples: Mapping[tuple[str, frozenset[tuple[str, str]]], float]) -> bool:
        return _value(samples, "gateway_encoder_texts_total", encoder="embedder-onnx") >= 1

    await _poll(gw, counted)
    samples = await gw.metrics()
    for encoder in ("embedder-onnx", "clause-judge-onnx"):
        assert ("gateway_encoder_queued_texts", frozenset({("encoder", encoder)})) in samples
    assert _total(samples, "gateway_encoder_refused_texts_total") == 0
    assert _total(samples, "gateway_encoder_failed_batches_total") == 0


@pytest.fixture
async def shadow_gw(
    backend: RecordingBackend, access_log: AccessLog, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Gateway]:
    """A traced gateway with the in-process semantic cache in shadow mode and no error bound."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    cache = CacheSettings(semantic="shadow", semantic_timeout_s=WAIT_S)
    settings = _settings(cache, exact_cache_s=WAIT_S, semantic_cache_s=WAIT_S)
    async for served in _gateway(settings, backend, access_log):
        yield served


async def test_shadow_lookups_are_counted_judged_and_logged(shadow_gw: Gateway) -> None:
    """Shadow mode without a bound never serves a paraphrase, but counts its lookup as a
    would-be hit, judges it against the fresh answer and names it in the log line."""
    gw = shadow_gw
    first = await gw.post(_chat("How do I reset my password?", system=True, temperature=0))
    assert first.status == 200 and first.headers["x-cache"] == "miss"
    await gw.spans.writebacks(first.request_id, 2)  # exact entry and vector entry
    reply = await gw.post(_chat("How can I reset my password?", system=True, temperature=0))
    assert reply.status == 200 and reply.headers["x-cache"] == "miss"
    assert gw.backend.calls == 2
    assert getattr(await gw.log.line(first.request_id), "cache_shadow", None) == "miss"
    line = await gw.log.line(reply.request_id)
    assert (getattr(line, "cache", None), getattr(line, "cache_shadow", None)) == ("miss", "hit")

    judged = "gateway_semantic_judgements_total"
    await _poll(gw, lambda s: _value(s, judged, outcome="correct") == 1)
    samples = await gw.metrics()
    lookups = "gateway_cache_lookups_total"
    assert _value(samples, lookups, kind="semantic_shadow", result="hit") == 1
    assert _value(samples, lookups, kind="semantic_shadow", result="miss") == 1
    assert _matching(samples, lookups, kind="semantic") == 0  # nothing was looked up to serve
    assert _value(samples, judged, outcome="wrong") == 0
    assert _value(samples, "gateway_semantic_error_rate") == 0


# --------------------------------------------------------------------------- W3C context


async def test_client_traceparent_parents_root_and_reaches_backend(gw: Gateway) -> None:
    """A sampled client traceparent parents the server span; the backend gets the same
    trace with the server span as its parent."""
    reply = await gw.post(_chat(), {"traceparent": TRACEPARENT, "tracestate": TRACESTATE})
    assert reply.status == 200
    tree = await gw.spans.tree(reply.request_id)

    root = _context(tree.root)
    assert f"{root.trace_id:032x}" == CLIENT_TRACE
    assert tree.root.parent is not None and tree.root.parent.is_remote
    assert f"{tree.root.parent.span_id:016x}" == CLIENT_SPAN
    (headers,) = gw.backend.seen_headers
    assert headers["traceparent"] == f"00-{CLIENT_TRACE}-{root.span_id:016x}-01"
    assert headers["tracestate"] == TRACESTATE


async def test_unsampled_client_traceparent_is_forwarded(gw: Gateway) -> None:
    """An unsampled client context records no spans and reaches the backend unchanged."""
    unsampled = TRACEPARENT.removesuffix("-01") + "-00"
    reply = await gw.post(_chat(), {"traceparent": unsampled})
    assert reply.status == 200
    await gw.log.line(reply.request_id)
    assert not [s for s in gw.spans.spans if f"{_context(s).trace_id:032x}" == CLIENT_TRACE]
    assert gw.backend.seen_headers == [{"traceparent": unsampled}]


async def test_untraced_gateway_forwards_client_context(
    backend: RecordingBackend, access_log: AccessLog
) -> None:
    """With tracing off the client's traceparent and tracestate reach the backend as sent,
    and the log line carries the client's trace id."""
    async for gw in _gateway(_settings(), backend, access_log, traced=False):
        headers = {"traceparent": TRACEPARENT, "tracestate": TRACESTATE}
        for payload in (_chat(), _chat(stream=True)):
            reply = await gw.post(payload, headers)
            assert reply.status == 200
            record = await gw.log.line(reply.request_id)
            # Not traced here, but the line still names the client's trace.
            assert getattr(record, "trace_id", "missing") == CLIENT_TRACE
        assert backend.seen_headers == [headers, headers]


# -------------------------------------------------------------------------------- /metrics


def _value(
    samples: Mapping[tuple[str, frozenset[tuple[str, str]]], float], name: str, **labels: str
) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def _matching(
    samples: Mapping[tuple[str, frozenset[tuple[str, str]]], float], name: str, **labels: str
) -> float:
    """The sum over every series of `name` whose labels include `labels`."""
    wanted = labels.items()
    return sum(
        value
        for (sample, sample_labels), value in samples.items()
        if sample == name and wanted <= sample_labels
    )


def _total(samples: Mapping[tuple[str, frozenset[tuple[str, str]]], float], name: str) -> float:
    return _matching(samples, name)


async def test_metrics_after_known_traffic(one_slot: Gateway) -> None:
    """After a known mix of misses, hits, a stream, a 400 and a 429, /metrics shows exactly
    those requests, stages, lookups, tokens and sheds, and the sampled replica gauges."""
    gw = one_slot
    hold = gw.backend.hold
    assert hold is not None
    misses = [await gw.post(_chat(f"question {n}", temperature=0)) for n in range(3)]
    assert [r.headers["x-cache"] for r in misses] == ["miss"] * 3
    await gw.spans.writebacks(misses[0].request_id, 1)
    hits = [await gw.post(_chat("question 0", temperature=0)) for _ in range(2)]
    assert [r.headers["x-cache"] for r in hits] == ["hit-exact"] * 2
    stream = await gw.post(_chat(stream=True))
    assert stream.status == 200 and stream.headers["x-cache"] == "bypass"
    assert (await gw.post(b"{not json")).status == 400

    held = asyncio.create_task(gw.post(_chat("hold the only slot")))
    await gw.backend.wait_held(1)
    replica = {"model": "m", "replica": REPLICA_URL}
    # The gauges come from a 1 s sampling timer, which has no event to wait on: poll it.
    await _poll(gw, lambda s: _value(s, "gateway_replica_inflight_requests", **replica) == 1)
    assert (await gw.post(_chat())).status == 429
    hold.set()
    assert (await held).status == 200
    await gw.log.wait_count(9)  # every request above has been observed

    samples = await gw.metrics()
    route = {"route": ROUTE, "model": "m"}
    count = "gateway_request_duration_seconds_count"
    assert _value(samples, count, **route, cache="miss", status="200") == 3
    assert _value(samples, count, **route, cache="hit-exact", status="200") == 2
    assert _value(samples, count, **route, cache="bypass", status="200") == 2
    assert _value(samples, count, **route, cache="bypass", status="429") == 1
    assert _matching(samples, count, route=ROUTE, cache="none", status="400") == 1
    assert _matching(samples, count, route=ROUTE) == 9
    routes = {dict(labels)["route"] for name, labels in samples if name == count}
    assert routes == {ROUTE, "/metrics"}  # the scrapes that polled the gauges count too

    lookups = "gateway_cache_lookups_total"
    assert _value(samples, lookups, kind="exact", result="hit") == 2
    assert _value(samples, lookups, kind="exact", result="miss") == 3
    assert _total(samples, lookups) == 5
    shed = "gateway_shed_requests_total"
    assert _value(samples, shed, reason="overloaded", priority="interactive") == 1
    assert _total(samples, shed) == 1
    assert _total(samples, "gateway_budget_overruns_total") == 0

    stages = "gateway_stage_duration_seconds_count"
    assert {
        stage: _value(samples, stages, stage=stage)
        for stage in ("parse", "exact_cache", "admission", "backend", "ttft", "stream")
    } == {"parse": 8, "exact_cache": 5, "admission": 6, "backend": 4, "ttft": 1, "stream": 1}
    assert _total(samples, stages) == 25
    assert _value(samples, "gateway_time_to_first_token_seconds_count", model="m") == 1
    assert _value(samples, "gateway_time_per_output_token_seconds_count", model="m") == 1
    # 3 misses, the stream and the held request were generated: 3 + 3 each; the 2 hits'
    # answers were served from the cache.
    assert _value(samples, "gateway_tokens_total", model="m", type="input") == 15
    assert _value(samples, "gateway_tokens_total", model="m", type="output") == 15
    assert _value(samples, "gateway_tokens_total", model="m", type="cached_output") == 6

    assert _value(samples, "gateway_replica_healthy", **replica) == 1
    assert ("gateway_replica_queued_requests", frozenset(replica.items())) in samples
    assert ("gateway_writeback_queue_depth", frozenset()) in samples


@pytest.mark.parametrize("stream", [False, True])
async def test_coalesced_callers_tokens_are_generated_once(
    gw: Gateway, monkeypatch: pytest.MonkeyPatch, stream: bool
) -> None:
    """Two identical requests on one backend call: its tokens are generated (and its prompt
    read) once; the caller that joined it counts its answer as type=cached_output."""
    joined = asyncio.Event()
    flights, method = (StreamFlight, "open") if stream else (SingleFlight, "do_shared")
    join = getattr(flights, method)

    async def spied(flight: Any, key: str, *args: Any) -> Any:
        if flight.in_flight:
            joined.set()  # one key in this test: a call in flight is the one it joins
        return await join(flight, key, *args)

    monkeypatch.setattr(flights, method, spied)
    hold = gw.backend.hold
    assert hold is not None
    payload = _chat("hold: asked twice at once", temperature=0, stream=stream)
    leader = asyncio.create_task(gw.post(payload))
    await gw.backend.wait_held(1)
    follower = asyncio.create_task(gw.post(payload))
    await joined.wait()
    hold.set()
    replies = [await leader, await follower]
    assert [r.status for r in replies] == [200, 200]
    assert gw.backend.calls == 1
    await gw.log.wait_count(2)

    samples = await gw.metrics()
    tokens = "gateway_tokens_total"
    assert _value(samples, tokens, model="m", type="input") == 3
    assert _value(samples, tokens, model="m", type="output") == len(ANSWER_WORDS)
    assert _value(samples, tokens, model="m", type="cached_output") == len(ANSWER_WORDS)


async def test_metrics_label_requests_without_a_model_none(gw: Gateway) -> None:
    """A request refused before its model is known counts under model="none", like its
    cache="none", not under "other" (which means a model that is not configured)."""
    invalid = await gw.post(b"{not json")
    assert invalid.status == 400
    unknown = await gw.post({**_chat(), "model": "not-configured"})
    assert unknown.status == 404
    await gw.log.wait_count(2)

    samples = await gw.metrics()
    count = "gateway_request_duration_seconds_count"
    assert _value(samples, count, route=ROUTE, model="other", cache="none", status="404") == 1
    assert _value(samples, count, route=ROUTE, model="none", cache="none", status="400") == 1


async def _poll(
    gw: Gateway,
    ready: Callable[[Mapping[tuple[str, frozenset[tuple[str, str]]], float]], bool],
) -> None:
    """Scrape /metrics until `ready` holds (bounded)."""
    async with asyncio.timeout(WAIT_S):
        while True:
            if ready(await gw.metrics()):
                return
            await asyncio.sleep(0.05)


async def test_every_answer_is_logged_and_counted(gw: Gateway) -> None:
    """Unknown paths, a route with a trailing slash, a wrong method and a probe each log one
    line and count once, under a bounded route (`other` for any unknown path)."""
    sent = [
        ("GET", "/nope", 404),
        ("POST", "/v1/files", 404),
        ("POST", f"{ROUTE}/", 404),
        ("DELETE", ROUTE, 405),
        ("GET", "/healthz", 200),
    ]
    async with aiohttp.ClientSession() as session:
        for method, path, status in sent:
            async with session.request(method, gw.url + path, allow_redirects=False) as response:
                assert response.status == status
    await gw.log.wait_count(len(sent), api_only=False)
    logged = sorted((r.method, r.route, r.status) for r in gw.log.records)  # type: ignore[attr-defined]
    assert logged == sorted(
        [
            ("GET", "other", 404),
            ("POST", "other", 404),
            ("POST", "other", 404),
            ("DELETE", ROUTE, 405),
            ("GET", "/healthz", 200),
        ]
    )
    samples = await gw.metrics()
    count = "gateway_request_duration_seconds_count"
    none = {"model": "none", "cache": "none"}
    assert _value(samples, count, route="other", status="404", **none) == 3
    assert _value(samples, count, route=ROUTE, status="405", **none) == 1
    assert _value(samples, count, route="/healthz", status="200", **none) == 1


async def test_every_answer_carries_its_request_id_and_server_timing(gw: Gateway) -> None:
    """Model listings and lookups (found or not), a wrong method, an unknown path and a probe
    each carry `x-request-id` (the id of their log line) and `Server-Timing` with the total."""
    sent = [
        ("GET", "/v1/models", 200),
        ("GET", "/v1/models/m", 200),
        ("GET", "/v1/models/nope", 404),
        ("DELETE", ROUTE, 405),
        ("GET", "/nope", 404),
        ("GET", "/healthz", 200),
    ]
    async with aiohttp.ClientSession() as session:
        for method, path, status in sent:
            async with session.request(method, gw.url + path) as response:
                assert response.status == status
                request_id = response.headers["x-request-id"]
                assert "total;dur=" in response.headers["server-timing"], path
            record = await gw.log.line(request_id)
            assert (record.method, record.status) == (method, status)  # type: ignore[attr-defined]


# ----------------------------------------------------------------------------- access log


async def test_access_log_line(gw: Gateway) -> None:
    """Each request logs one JSON line with its id, trace, status, route, model, cache,
    priority and stage timings, and no prompt or answer text."""
    reply = await gw.post(_chat(temperature=0), {"traceparent": TRACEPARENT})
    assert reply.status == 200
    tree = await gw.spans.tree(reply.request_id)
    record = await gw.log.line(reply.request_id)

    line = JsonFormatter().format(record)
    assert "\n" not in line
    assert "pelican" not in line and "Quokka" not in line
    entry = orjson.loads(line)
    root = _context(tree.root)
    assert entry["logger"] == ACCESS_LOGGER and entry["level"] == "info"
    assert entry["request_id"] == reply.request_id
    assert entry["trace_id"] == CLIENT_TRACE == f"{root.trace_id:032x}"
    assert entry["span_id"] == f"{root.span_id:016x}"
    assert (entry["method"], entry["route"], entry["model"]) == ("POST", ROUTE, "m")
    assert (entry["status"], entry["cache"], entry["priority"]) == (200, "miss", "interactive")
    assert entry["stream"] is False
    assert (entry["input_tokens"], entry["output_tokens"]) == (3, len(ANSWER_WORDS))
    assert entry["finish_reasons"] == ["stop"]
    assert entry["replica"] == REPLICA_URL
    assert set(entry["stages"]) == {"parse", "exact_cache", "admission", "backend"}
    assert all(isinstance(ms, float) and ms >= 0 for ms in entry["stages"].values())
    assert entry["duration_ms"] >= 0

    invalid = await gw.post(b"{not json")
    assert invalid.status == 400
    failed = orjson.loads(JsonFormatter().format(await gw.log.line(invalid.request_id)))
    assert (failed["status"], failed["model"], failed["cache"]) == (400, None, None)
    assert failed["error"] == "invalid_json" and failed["stages"] == {}
    logged = [getattr(r, "request_id", None) for r in gw.log.records]
    assert logged == [reply.request_id, invalid.request_id]
