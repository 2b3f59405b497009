"""A client that leaves is seen at every stage, not only mid-stream: the work done for it is
cancelled at once (issue #14), and nothing is left behind."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence

import orjson
import pytest
from starlette.types import Message

from backends.replica import Replica
from budgets.settings import BudgetSettings
from gateway.app import create_app
from gateway.client_watch import ClientWatch
from gateway.settings import Settings
from tests.support.asgi_server import serving
from tests.support.fake_backend import FakeBackend

PATH = "/v1/chat/completions"


@pytest.fixture
def backend() -> FakeBackend:
    return FakeBackend(url="fake://a", hold=asyncio.Event())


@pytest.fixture
async def address(backend: FakeBackend) -> AsyncIterator[tuple[str, int]]:
    replicas: Sequence[Replica] = [Replica("m", backend)]
    async with serving(create_app(Settings(), replicas)) as url:
        host, port = url.removeprefix("http://").split(":")
        yield host, int(port)


def _request(body: dict[str, object], declared: int | None = None) -> bytes:
    raw = orjson.dumps(body)
    length = len(raw) if declared is None else declared
    head = (
        f"POST {PATH} HTTP/1.1\r\nhost: test\r\ncontent-type: application/json\r\n"
        f"content-length: {length}\r\n\r\n"
    )
    return head.encode() + raw


def _chat(text: str, stream: bool) -> dict[str, object]:
    return {"model": "m", "messages": [{"role": "user", "content": text}], "stream": stream}


async def _until(condition: Callable[[], bool], timeout_s: float = 10.0) -> None:
    async with asyncio.timeout(timeout_s):
        while not condition():  # noqa: ASYNC110
            await asyncio.sleep(0.01)


async def _send_and_leave(
    address: tuple[str, int], payload: bytes, ready: Callable[[], bool]
) -> None:
    """Send `payload`, wait until `ready()`, then close the connection without reading."""
    _, writer = await asyncio.open_connection(*address)
    writer.write(payload)
    await writer.drain()
    await _until(ready)
    writer.close()
    await writer.wait_closed()


async def _answered(address: tuple[str, int], text: str) -> int:
    """A fresh request is still served: its status."""
    reader, writer = await asyncio.open_connection(*address)
    writer.write(_request(_chat(text, False)))
    await writer.drain()
    status = int((await reader.readline()).split()[1])
    writer.close()
    await writer.wait_closed()
    return status


def _tasks() -> int:
    return len(asyncio.all_tasks())


@pytest.mark.parametrize("stream", [True, False])
async def test_leaving_before_the_first_chunk_cancels_the_backend_call(
    address: tuple[str, int], backend: FakeBackend, stream: bool
) -> None:
    """A client leaving before the first chunk ends the backend call at once, not at 30 s."""
    baseline = _tasks()
    await _send_and_leave(address, _request(_chat("hold on", stream)), lambda: backend.held == 1)
    await backend.wait_held(0, timeout_s=5.0)
    assert backend.calls == 1
    await _until(lambda: _tasks() <= baseline)
    assert await _answered(address, "after") == 200


async def test_leaving_before_the_first_chunk_of_a_backend_that_hangs(
    address: tuple[str, int], backend: FakeBackend
) -> None:
    """A backend stream that never yields is closed once the client leaves."""
    backend.hang_before_first = True
    await _send_and_leave(address, _request(_chat("hi", True)), lambda: backend.calls == 1)
    await _until(lambda: backend.closed_early == 1, timeout_s=5.0)


async def test_leaving_before_the_body_is_read_costs_nothing(
    address: tuple[str, int], backend: FakeBackend
) -> None:
    """A body that never completes: no backend call, no task left, service goes on."""
    baseline = _tasks()
    partial = _request(_chat("hi", True), declared=4096)
    await _send_and_leave(address, partial, lambda: True)
    await _until(lambda: _tasks() <= baseline)
    assert backend.calls == 0
    assert await _answered(address, "after") == 200


async def test_many_answers_leave_no_watcher_behind(
    address: tuple[str, int], backend: FakeBackend
) -> None:
    """Answered requests (streamed or not) end their watchers with them."""
    backend.hold = None
    baseline = _tasks()
    for i in range(20):
        reader, writer = await asyncio.open_connection(*address)
        writer.write(_request(_chat(f"q{i}", i % 2 == 0)))
        await writer.drain()
        assert b" 200 " in await reader.readline()
        writer.close()
        await writer.wait_closed()
    await _until(lambda: _tasks() <= baseline)


class Receiver:
    """An ASGI `receive` that reports a disconnect once `leave()` is called."""

    def __init__(self) -> None:
        self._left = asyncio.Event()

    def leave(self) -> None:
        self._left.set()

    async def __call__(self) -> Message:
        await self._left.wait()
        return {"type": "http.disconnect"}


async def test_a_stopped_watch_never_cancels() -> None:
    """A disconnect reported after `stop()` (the end of the response) cancels nothing."""
    receive = Receiver()
    task = asyncio.current_task()
    assert task is not None
    watch = ClientWatch(receive, task)
    watch.start()
    await asyncio.sleep(0)
    watch.stop()
    receive.leave()
    for _ in range(5):
        await asyncio.sleep(0)  # a cancellation would land here
    assert not watch.gone and not watch.left() and task.cancelling() == 0


async def test_a_disconnect_cancels_the_task_and_left_consumes_it() -> None:
    """A disconnect cancels the task where it waits; `left()` takes that back once."""
    receive = Receiver()
    task = asyncio.current_task()
    assert task is not None
    watch = ClientWatch(receive, task)
    watch.start()
    receive.leave()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.Event().wait()
    assert watch.left() and task.cancelling() == 0
    assert watch.left() and task.cancelling() == 0  # consumed only once
    watch.stop()


async def test_leaving_while_queued_for_a_slot_frees_the_queue() -> None:
    """A client leaving while queued for a slot: out of the queue at once, no backend call."""
    backend = FakeBackend(url="fake://a", hold=asyncio.Event())
    replica = Replica("m", backend)
    settings = Settings(budgets=BudgetSettings(max_inflight=1))
    async with serving(create_app(settings, [replica])) as url:
        host, port = url.removeprefix("http://").split(":")
        address = (host, int(port))
        _, holder = await asyncio.open_connection(*address)
        holder.write(_request(_chat("hold the slot", True)))
        await holder.drain()
        await backend.wait_held(1)
        queued = replica.admission.queued  # the fleet admits through the replica it was given
        await _send_and_leave(address, _request(_chat("queued", True)), lambda: queued() == 1)
        await _until(lambda: queued() == 0, timeout_s=5.0)
        assert backend.calls == 1
        holder.close()
        await holder.wait_closed()
        await backend.wait_held(0, timeout_s=5.0)


async def test_an_armed_watch_stopped_soon_starts_no_task() -> None:
    """A request that ends within the quiet period never pays for a watcher task."""
    task = asyncio.current_task()
    assert task is not None
    watch = ClientWatch(Receiver(), task)
    tasks = _tasks()
    watch.arm(0.05)
    watch.stop()
    await asyncio.sleep(0.1)
    assert not watch.started and _tasks() == tasks


async def test_an_armed_watch_starts_after_the_quiet_period() -> None:
    """Armed and not stopped, the watch starts and sees a client that left meanwhile."""
    receive = Receiver()
    task = asyncio.current_task()
    assert task is not None
    watch = ClientWatch(receive, task)
    receive.leave()
    watch.arm(0.01)
    with pytest.raises(asyncio.CancelledError):
        await asyncio.sleep(5)
    assert watch.started and watch.left()
    watch.stop()
