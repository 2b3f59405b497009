"""The stream pump: chunks to SSE writes, stalls and the total budget, a slow reader, a client
that leaves, failures after the first byte, and the write-back tap."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable

import orjson
import pytest
from prometheus_client.parser import text_string_to_metric_families
from starlette.types import Message, Send

from budgets.request_budget import ClassBudgets, RequestBudget
from core.answers import ChoiceDelta, StreamChunk, Usage
from core.backend_errors import BackendError
from core.errors import DeadlineExceeded
from gateway.client_watch import CLIENT_WATCH_SCOPE_KEY, ClientWatch
from gateway.drain import DRAIN
from gateway.http_protocol import CONNECTION_ABORT_SCOPE_KEY
from gateway.render import DONE_EVENT, ChunkRenderer
from gateway.stream_pump import StreamPump
from obs.metrics import GatewayMetrics
from obs.observer import Observer
from obs.request_record import RequestRecord
from obs.tracing import Tracing

PROMPT_TOKENS = 3


class Source:
    """A started backend stream: `count` chunks of one token each (the first already received,
    reporting the prompt's tokens), waiting `gap_s` before each later one, then (if `hang`)
    nothing more until closed (`hanging` is set then); or failing with `fail` after `count`
    chunks. `sent` counts the chunks handed out."""

    def __init__(
        self,
        count: int,
        gap_s: float = 0.0,
        hang: bool = False,
        fail: Exception | None = None,
    ) -> None:
        self.count, self.gap_s, self.hang, self.fail = count, gap_s, hang, fail
        self.closed = False
        self.sent = 0
        self.hanging = asyncio.Event()
        self.failures: list[BaseException] = []
        self.usages: list[Usage] = []
        self._chunks = self._generate()
        self.first: StreamChunk | None = None

    async def start(self) -> Source:
        self.first = await anext(self._chunks)
        return self

    @property
    def chunks(self) -> AsyncIterator[StreamChunk]:
        return self._chunks

    def failed(self, exc: BaseException) -> None:
        self.failures.append(exc)

    def finished(self, usage: Usage) -> None:
        self.usages.append(usage)

    async def close(self) -> None:
        self.closed = True
        await self._chunks.aclose()

    async def _generate(self) -> AsyncGenerator[StreamChunk, None]:
        for i in range(self.count):
            if i and self.gap_s:
                await asyncio.sleep(self.gap_s)
            last = i == self.count - 1 and not self.hang and self.fail is None
            self.sent += 1
            yield StreamChunk(
                [ChoiceDelta(0, f"t{i}", "stop" if last else None, token_count=1)],
                Usage(PROMPT_TOKENS, self.count) if last else None,
                PROMPT_TOKENS if i == 0 else 0,
            )
        if self.fail is not None:
            raise self.fail
        if self.hang:
            self.hanging.set()
            await asyncio.Event().wait()


class Tap:
    """Counts what a write-back tap hears."""

    def __init__(self) -> None:
        self.chunks = 0
        self.finished = False

    def add(self, chunk: StreamChunk) -> None:
        self.chunks += 1

    def finish(self) -> None:
        self.finished = True


class Client:
    """The ASGI side: collects each `send`; `slow_s` delays every body write; `leave_after`
    disconnects after that many body writes; `stuck_at` makes that body write (counted from
    1) and any after it wait for good, as into a full send buffer."""

    def __init__(
        self, slow_s: float = 0.0, leave_after: int | None = None, stuck_at: int | None = None
    ) -> None:
        self.sent: list[Message] = []
        self.slow_s = slow_s
        self.leave_after = leave_after
        self.stuck_at = stuck_at
        self.aborted = False
        self._left = asyncio.Event()

    def abort(self) -> None:
        self.aborted = True

    async def send(self, message: Message) -> None:
        self.sent.append(message)
        if message["type"] == "http.response.body":
            if self.stuck_at is not None and len(self.bodies) >= self.stuck_at:
                await asyncio.Event().wait()  # a client that stopped reading
            if self.slow_s:
                await asyncio.sleep(self.slow_s)  # the behaviour under test: a slow reader
            if self.leave_after is not None and len(self.bodies) >= self.leave_after:
                self._left.set()

    async def receive(self) -> Message:
        await self._left.wait()
        return {"type": "http.disconnect"}

    @property
    def bodies(self) -> list[bytes]:
        return [m["body"] for m in self.sent if m["type"] == "http.response.body"]

    def events(self) -> list[bytes]:
        return [e for e in b"".join(self.bodies).split(b"\n\n") if e]


def _budget(total_s: float, stall_s: float) -> RequestBudget:
    budgets = ClassBudgets(total_s=total_s, ttft_s=total_s, admission_s=total_s, stall_s=stall_s)
    return RequestBudget.start("interactive", budgets, time.monotonic, time.monotonic())


def _record() -> RequestRecord:
    record = RequestRecord("POST", "/v1/chat/completions", time.monotonic(), 0)
    record.note_request("m", stream=True)
    return record


def _renderer() -> ChunkRenderer:
    return ChunkRenderer(
        "chat", response_id="r", created=0, model="m", fingerprint="fp", include_usage=True
    )


async def _run(
    source: Source,
    budget: RequestBudget,
    record: RequestRecord,
    client: Client | None = None,
    tap: Tap | None = None,
    send_timeout_s: float = 60.0,
) -> Client:
    client = client or Client()
    pump = StreamPump(
        await source.start(), _renderer(), {}, budget, record, tap, send_timeout_s=send_timeout_s
    )
    scope = {"type": "http", CONNECTION_ABORT_SCOPE_KEY: client.abort}
    await pump(scope, client.receive, client.send)
    return client


def _error_of(client: Client) -> dict[str, object]:
    events = client.events()
    assert events[-1] == DONE_EVENT.strip()
    error: dict[str, object] = orjson.loads(events[-2].removeprefix(b"data: "))["error"]
    return error


async def test_every_chunk_is_an_event_and_the_last_goes_out_with_the_end() -> None:
    """Each chunk is one write; the usage chunk and [DONE] share the final write; the source
    hears the usage."""
    source, record, tap = Source(4), _record(), Tap()
    client = await _run(source, _budget(30.0, 5.0), record, tap=tap)
    assert client.sent[0]["type"] == "http.response.start"
    assert len(client.bodies) == 4 and client.bodies[-1].endswith(DONE_EVENT)
    assert client.sent[-1]["more_body"] is False
    assert (record.input_tokens, record.output_tokens) == (3, 4)
    assert record.finish_reasons == ["stop"] and record.stream_ended_at is not None
    assert tap.chunks == 4 and tap.finished and source.closed
    assert source.usages == [Usage(3, 4)]  # the replica learns how long the stream took


async def test_stall_ends_stream_and_closes_backend() -> None:
    """No chunk within the stall budget: an error event naming stall, [DONE], source closed."""
    source, record, tap = Source(2, hang=True), _record(), Tap()
    client = await _run(source, _budget(30.0, 0.1), record, tap=tap)
    error = _error_of(client)
    assert error["code"] == "deadline_exceeded" and "stall" in str(error["message"])
    assert source.closed and record.overruns == ["stall"] and not tap.finished
    assert [str(exc) for exc in source.failures] == ["Deadline exceeded in stage stall."]
    assert [getattr(exc, "produced", None) for exc in source.failures] == [2]


async def test_a_backend_deadline_mid_stream_says_how_many_tokens_came() -> None:
    """The backend's own deadline ends a stream after three tokens: the failure the replica
    hears says three came (admission judges the run-out by the next token, not the length
    the request was admitted on)."""
    source, record = Source(3, fail=DeadlineExceeded("total")), _record()
    client = await _run(source, _budget(30.0, 5.0), record)
    assert "total" in str(_error_of(client)["message"])
    assert [getattr(exc, "produced", None) for exc in source.failures] == [3]


async def test_total_budget_ends_a_stream_that_never_stalls() -> None:
    """Steady chunks past the total budget end with an error event naming the total."""
    source, record = Source(10_000, gap_s=0.01), _record()
    client = await _run(source, _budget(0.2, 5.0), record)
    assert "total" in str(_error_of(client)["message"])
    assert source.closed and record.overruns == ["total"]


async def test_slow_reader_is_not_a_stall() -> None:
    """Time spent writing to the client does not count against the stall budget."""
    source, record = Source(3), _record()
    client = await _run(source, _budget(30.0, 0.05), record, Client(slow_s=0.15))
    assert client.bodies[-1].endswith(DONE_EVENT) and record.overruns == []


async def test_a_reader_that_stops_is_cut_off_at_the_total() -> None:
    """A write still waiting at the total deadline is given up: the backend call is closed,
    the connection aborted with nothing more written, and the overrun of the total noted;
    the replica is not blamed."""
    source, record, tap = Source(1_000_000), _record(), Tap()
    client = await _run(source, _budget(0.3, 30.0), record, Client(stuck_at=3), tap)
    assert source.closed and client.aborted and not tap.finished
    assert len(client.bodies) == 3 and not client.bodies[-1].endswith(DONE_EVENT)
    assert record.error == "deadline_exceeded" and record.overruns == ["total"]
    assert source.failures == []


async def test_a_reader_that_stops_is_cut_off_after_the_send_timeout() -> None:
    """A write that waits past the send timeout, with the total far off, ends the stream as
    a client that left: backend call closed, connection aborted, no budget overrun."""
    source, record = Source(1_000_000), _record()
    client = await _run(source, _budget(30.0, 30.0), record, Client(stuck_at=2), None, 0.2)
    assert source.closed and client.aborted and len(client.bodies) == 2
    assert record.error == "client_closed_request" and record.overruns == []
    assert source.failures == []


@pytest.mark.parametrize("count", [1, 3])
async def test_the_last_write_is_bounded_by_the_send_timeout(count: int) -> None:
    """A stream whose end cannot be written is given up after the send timeout."""
    source, record = Source(count), _record()
    client = await _run(source, _budget(30.0, 30.0), record, Client(stuck_at=count), None, 0.2)
    assert source.closed and client.aborted
    assert client.bodies[-1].endswith(DONE_EVENT)  # written, never taken by the client
    assert record.error == "client_closed_request"


async def test_failure_after_first_byte_is_an_error_event() -> None:
    """A backend error mid-stream: an error event then [DONE]; the source hears the failure."""
    source, record, tap = Source(2, fail=BackendError("engine died")), _record(), Tap()
    client = await _run(source, _budget(30.0, 5.0), record, tap=tap)
    assert _error_of(client)["message"] == BackendError("engine died").public_message
    assert len(source.failures) == 1 and source.closed and not tap.finished
    assert record.error is not None


async def test_client_that_leaves_closes_the_backend_and_writes_nothing_more() -> None:
    """A disconnect ends the pump: the source is closed, nothing is kept, no [DONE] is sent,
    and the record says the client closed it (its status stays the 200 already sent)."""
    source, record, tap = Source(3, hang=True), _record(), Tap()
    client = await _run(source, _budget(30.0, 30.0), record, Client(leave_after=1), tap)
    assert source.closed and not tap.finished
    assert not any(body.endswith(DONE_EVENT) for body in client.bodies)
    assert record.error == "client_closed_request"


@pytest.mark.parametrize("count", [1, 2])
async def test_short_streams_end_in_one_final_write(count: int) -> None:
    """A stream of one or two chunks still ends with its last chunk and [DONE] together."""
    client = await _run(Source(count), _budget(30.0, 5.0), _record())
    assert len(client.bodies) == count and b"t0" in client.bodies[0]


class Joined(Source):
    """A subscription to a shared stream: nothing received yet, every chunk in `chunks`."""

    async def start(self) -> Source:
        return self


async def test_a_source_with_no_first_chunk_is_read_whole() -> None:
    """A joined (coalesced) stream delivers every chunk through `chunks`."""
    client = await _run(Joined(3), _budget(30.0, 5.0), _record())
    assert len(client.bodies) == 3 and b"t0" in client.bodies[0]
    assert client.bodies[-1].endswith(DONE_EVENT)


async def test_a_pump_under_a_request_watch_uses_it() -> None:
    """Under the request's watch the pump starts no watcher; a client leaving ends it quietly."""
    source, record, client = Source(3, hang=True), _record(), Client(leave_after=1)
    task = asyncio.current_task()
    assert task is not None
    watch = ClientWatch(client.receive, task)
    watch.start()
    pump = StreamPump(await source.start(), _renderer(), {}, _budget(30.0, 30.0), record)
    tasks = len(asyncio.all_tasks())
    scope = {"type": "http", CLIENT_WATCH_SCOPE_KEY: watch}
    await pump(scope, client.receive, _counting(client.send, tasks))
    watch.stop()
    assert watch.gone and source.closed and task.cancelling() == 0
    assert not any(body.endswith(DONE_EVENT) for body in client.bodies)


def _counting(send: Send, tasks: int) -> Send:
    """`send`, checking that no task was started since `tasks` were counted."""

    async def counted(message: Message) -> None:
        assert len(asyncio.all_tasks()) == tasks
        await send(message)

    return counted


async def _ends_cleanly(record: RequestRecord) -> Source:
    source = Source(4)
    await _run(source, _budget(30.0, 5.0), record)
    return source


async def _replica_fails(record: RequestRecord) -> Source:
    source = Source(2, fail=BackendError("engine died"))
    await _run(source, _budget(30.0, 5.0), record)
    return source


async def _gateway_fails(record: RequestRecord) -> Source:
    source = Source(2, fail=RuntimeError("a bug"))
    await _run(source, _budget(30.0, 5.0), record)
    return source


async def _stalls(record: RequestRecord) -> Source:
    source = Source(2, hang=True)
    await _run(source, _budget(30.0, 0.1), record)
    return source


async def _runs_out_of_time(record: RequestRecord) -> Source:
    source = Source(10_000, gap_s=0.01)
    await _run(source, _budget(0.2, 5.0), record)
    return source


async def _client_leaves(record: RequestRecord) -> Source:
    source = Source(3, hang=True)
    await _run(source, _budget(30.0, 30.0), record, Client(leave_after=1))
    return source


async def _gateway_shuts_down(record: RequestRecord) -> Source:
    source = Source(2, hang=True)
    pump = asyncio.create_task(_run(source, _budget(30.0, 30.0), record))
    await source.hanging.wait()
    DRAIN.draining = True
    try:
        pump.cancel()
        await pump  # the shutdown grace ran out: an error event, then the end
    finally:
        DRAIN.draining = False
    return source


def _tokens_counted(record: RequestRecord) -> dict[str, float]:
    """What `gateway_tokens_total` holds once the observer reported the request."""
    metrics = GatewayMetrics(models=["m"])
    observer = Observer(metrics, Tracing.disabled())
    observer.finish(record, 200, time.monotonic())
    observer.close()
    text = metrics.render()[0].decode()
    return {
        sample.labels["type"]: sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "gateway_tokens_total" and sample.labels["model"] == "m"
    }


@pytest.mark.parametrize(
    "end",
    [
        _ends_cleanly,
        _replica_fails,
        _gateway_fails,
        _stalls,
        _runs_out_of_time,
        _client_leaves,
        _gateway_shuts_down,
    ],
)
async def test_tokens_are_counted_once_however_the_stream_ends(
    end: Callable[[RequestRecord], Awaitable[Source]],
) -> None:
    """`gateway_tokens_total` gets the prompt and every token the stream brought, once,
    whether it ended with its usage or broke before it."""
    record = _record()
    source = await end(record)
    assert source.closed and source.sent >= 1
    counted = {"input": PROMPT_TOKENS, "output": source.sent, "cached_output": 0}
    assert _tokens_counted(record) == counted
