"""An ASGI app for shutdown tests: its lifespan shutdown logs `LINES` access lines at once, so
they are still queued for the log writer when the server finishes. Each worker marks itself
started in `EXIT_APP_DIR`; the one that finds all `EXIT_APP_WORKERS` started sends SIGTERM to
the server (itself with one worker, the supervisor with several)."""

from __future__ import annotations

import logging
import os
import signal
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

from obs.logs import QUEUE_CAPACITY

LINES = QUEUE_CAPACITY - 1_000  # all fit the log writer's queue (uvicorn's few lines too)

Message = MutableMapping[str, Any]


async def app(
    scope: MutableMapping[str, Any],
    receive: Callable[[], Awaitable[Message]],
    send: Callable[[Message], Awaitable[None]],
) -> None:
    if scope["type"] != "lifespan":
        return
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
            _started()
        elif message["type"] == "lifespan.shutdown":
            log = logging.getLogger("gateway.access")
            for line in range(LINES):
                log.info("request", extra={"line": line})
            await send({"type": "lifespan.shutdown.complete"})
            return


def _started() -> None:
    directory = Path(os.environ["EXIT_APP_DIR"])
    workers = int(os.environ["EXIT_APP_WORKERS"])
    (directory / str(os.getpid())).touch()
    if len(list(directory.iterdir())) == workers:
        os.kill(os.getpid() if workers == 1 else os.getppid(), signal.SIGTERM)
