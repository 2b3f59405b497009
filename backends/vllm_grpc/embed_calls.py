"""A replica's `Embed` calls. The proto's `EmbedRequest` holds one tokenized input (and no
`dimensions`), so n inputs are n calls; sent all at once, some 1500 calls made the server
cancel some of them and slowed every other request on the replica. So at most `per_request`
of one request's calls are in flight, and `per_replica` of all its requests' calls; the first
call that fails cancels the others (the engine hears it as a cancelled RPC)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

import grpc

from backends.vllm_grpc.errors import map_rpc_error
from budgets.deadline import Deadline
from core.backend_errors import BackendRejected
from core.errors import DeadlineExceeded, GatewayError

PER_REQUEST = 64
"""Calls in flight for one request: enough to keep the engine's batch full, few enough that
other requests' calls still get through between them."""
PER_REPLICA = 256
"""Calls in flight on one replica for all its requests (vLLM's default `max_num_seqs`)."""


class EmbedCalls:
    """Sends the `Embed` calls of a replica's requests, `stub()` choosing each call's channel."""

    def __init__(
        self,
        url: str,
        stub: Callable[[], Any],
        *,
        per_request: int = PER_REQUEST,
        per_replica: int = PER_REPLICA,
    ) -> None:
        self._url = url
        self._stub = stub
        self._per_request = per_request
        self._slots = asyncio.Semaphore(per_replica)

    async def send(
        self,
        messages: Sequence[Any],
        deadline: Deadline,
        metadata: tuple[tuple[str, str], ...],
        param: Callable[[int], str],
    ) -> list[Any]:
        """The answer to each message, in order. A call the server rejects is a 400 naming its
        input (`param(position)`); the deadline bounds waiting for a slot too."""
        answers: list[Any] = [None] * len(messages)
        positions = iter(range(len(messages)))  # shared: each worker takes the next input

        async def worker() -> None:
            for position in positions:
                async with self._slots:
                    try:
                        answers[position] = await self._stub().Embed(
                            messages[position], timeout=deadline.remaining(), metadata=metadata
                        )
                    except grpc.aio.AioRpcError as exc:
                        error = map_rpc_error(exc, self._url, deadline)
                        raise _named(error, param(position)) from exc

        try:
            async with asyncio.timeout(deadline.remaining()), asyncio.TaskGroup() as group:
                for _ in range(min(self._per_request, len(messages))):
                    group.create_task(worker())
        except TimeoutError:
            raise DeadlineExceeded(deadline.stage) from None
        except ExceptionGroup as failed:  # the first failure; the others were cancelled
            first = failed.exceptions[0]
            raise first from first.__cause__
        return answers


def _named(error: GatewayError, param: str) -> GatewayError:
    """A rejection the server gave without naming the parameter names the input it refused."""
    if isinstance(error, BackendRejected) and error.param is None:
        error.param = param
    return error
