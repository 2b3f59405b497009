"""`SimServer`: the vLLM gRPC stand-in, embeddable in any running asyncio loop.

server = SimServer(SimConfig(port=0))
port = await server.start()          # serving VllmEngine, Health and Control
...                                  # connect to server.address
await server.stop(grace=1.0)         # health NOT_SERVING first, then drain
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import grpc

from standin.vllm.config import SimConfig
from standin.vllm.control import ControlServicer
from standin.vllm.health import HealthServicer
from standin.vllm.served_model import model_for
from standin.vllm.servicer import EngineServicer
from standin.vllm.state import SimState

log = logging.getLogger(__name__)

# vLLM's gRPC server accepts large prompts; keepalive policy stays at grpc's defaults
# (clients that ping too often get GOAWAY too_many_pings, as from the real server).
_OPTIONS = [
    ("grpc.max_send_message_length", 256 * 1024 * 1024),
    ("grpc.max_receive_message_length", 256 * 1024 * 1024),
    # Two servers must not share a port silently.
    ("grpc.so_reuseport", 0),
]

_WILDCARDS = frozenset({"", "0.0.0.0", "::", "[::]"})


def _host_port(host: str, port: int) -> str:
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"{host}:{port}"


class SimServer:
    """One stand-in server; `start` and `stop` run on the caller's event loop."""

    def __init__(self, config: SimConfig) -> None:
        self.config = config
        self._server: grpc.aio.Server | None = None
        self._state: SimState | None = None
        self._port = 0

    async def start(self) -> int:
        """Bind and start serving; returns the bound port."""
        if self._server is not None:
            raise RuntimeError("SimServer already started")
        config = self.config
        # Building the tokenizer (first run) and word tables is blocking work.
        model = await asyncio.to_thread(model_for, config)
        state = SimState(config)
        server = grpc.aio.server(options=_OPTIONS)
        server.add_generic_rpc_handlers(
            [
                EngineServicer(state, model).handler(),
                HealthServicer(state).handler(),
                ControlServicer(state).handler(),
            ]
        )
        target = _host_port(config.host, config.port)
        try:
            port = server.add_insecure_port(target)
        except RuntimeError as exc:
            raise OSError(f"sim: cannot bind {target}: {exc}") from exc
        if port == 0:
            raise OSError(f"sim: cannot bind {target}")
        await server.start()
        state.started_monotonic = time.monotonic()
        self._server, self._state, self._port = server, state, port
        log.debug("sim: serving model %r on %s", config.model, self.address)
        return port

    def begin_shutdown(self) -> None:
        """Answer NOT_SERVING on both health services while still serving every call."""
        if self._state is not None:
            self._state.shutting_down = True

    async def stop(self, grace: float = 1.0) -> None:
        """Answer NOT_SERVING at once, then let in-flight calls finish for up to `grace` s
        while new calls are refused."""
        if self._server is None:
            return
        self.begin_shutdown()
        await self._server.stop(grace)
        log.debug("sim: stopped %s", self.address)

    async def wait_for_termination(self) -> None:
        if self._server is not None:
            await self._server.wait_for_termination()

    @property
    def port(self) -> int:
        return self._port

    @property
    def address(self) -> str:
        """Where a client on this host connects: host:port, loopback for wildcard binds."""
        host = "127.0.0.1" if self.config.host in _WILDCARDS else self.config.host
        return _host_port(host, self._port)

    @property
    def state(self) -> SimState:
        """The live state (counters, admission, config), for in-process tests."""
        if self._state is None:
            raise RuntimeError("SimServer not started")
        return self._state

    def stats(self) -> dict[str, Any]:
        """The same document as Control/Stats."""
        return self.state.stats()

    def configure(self, **changes: Any) -> SimConfig:
        """The same as Control/Configure; raises ValueError for bad settings."""
        return self.state.configure(changes)

    def reset(self) -> SimConfig:
        """The same as Control/Reset."""
        return self.state.reset()
