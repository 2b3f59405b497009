"""Runs an ASGI app under uvicorn with the gateway's own HTTP protocol, in the test's loop."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import uvicorn
from starlette.types import ASGIApp

from bench.harness.probes import free_port
from gateway.http_protocol import BoundedHttpToolsProtocol, EdgeConfig


@dataclass(frozen=True)
class EdgeServer:
    """A running server: its port, and its connections as the server sees them."""

    port: int
    server: uvicorn.Server

    async def wait_closed(self, within_s: float) -> bool:
        """Whether the server has closed all its connections within `within_s` (polled: it
        tells no one)."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(within_s):
                while True:
                    if not self.server.server_state.connections:
                        return True
                    await asyncio.sleep(0.05)
        return False


@contextlib.asynccontextmanager
async def edge_serving(app: ASGIApp, **edge: Any) -> AsyncIterator[EdgeServer]:
    """Serve `app` through `BoundedHttpToolsProtocol` on a free loopback port (`edge`: more
    `EdgeConfig` settings) once startup completed."""
    config = EdgeConfig(
        app,
        host="127.0.0.1",
        port=free_port(),
        http=BoundedHttpToolsProtocol,
        log_level="warning",
        lifespan="off",
        **edge,
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    try:
        async with asyncio.timeout(30):
            while not server.started:
                if task.done():
                    task.result()
                    raise RuntimeError("uvicorn exited during startup")
                await asyncio.sleep(0.01)
        yield EdgeServer(config.port, server)
    finally:
        server.should_exit = True
        await task
