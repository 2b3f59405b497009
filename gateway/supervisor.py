"""Runs uvicorn as `uvicorn.run` does, with a supervisor of several workers that drains.

uvicorn's own supervisor (`GATEWAY_WORKERS` > 1) binds the listening socket, hands it to
each worker, and on SIGTERM signals the workers and waits for them. Three things go wrong
for a drain (`gateway.drain`):
- it keeps its own copy of the listening socket open until it exits, so when the workers
  stop accepting after the drain delay new connections are not refused: the kernel still
  completes them into the backlog of a socket nobody accepts from, and clients hang until
  the whole grace is over (a load balancer's retry would go elsewhere on a refusal);
- a second SIGTERM (or SIGINT) reaches only the supervisor, which no longer reads its
  signals while it waits for the workers, so it cannot cut the drain delay short as it does
  with one worker;
- it waits for a worker that never exits forever.
`DrainingMultiprocess` closes its socket copy once it stops (it starts no worker after
that), forwards later SIGTERM/SIGINT to the workers, and kills a worker that outlives the
drain delay plus the grace plus the bound of its closing stages (`gateway.drain`).
(tests/e2e/test_drain.py fails on the first two with uvicorn's own supervisor.)

uvicorn's supervisor also answers SIGHUP by restarting every worker, which loses their
in-process caches, stored responses and rate-limit state; SIGHUP means "re-read the key file"
here, so `DrainingMultiprocess` hands it to the workers, which do (`access.registry`). Until a
handler is in place SIGHUP is held (`access.sighup`): a worker starts with it blocked, as the
supervisor blocks it and a child inherits the mask, so one that reaches a worker still
starting waits for its handler instead of killing it (the default action).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import sys
import time
from typing import Any

from uvicorn.config import STARTUP_FAILURE, Config
from uvicorn.server import Server
from uvicorn.supervisors.multiprocess import Multiprocess

from access import sighup
from gateway.drain import STRAGGLER_MARGIN_S
from gateway.http_protocol import EdgeConfig

log = logging.getLogger("gateway")


class DrainingMultiprocess(Multiprocess):
    """uvicorn's supervisor of several workers, made to drain (see the module docstring)."""

    def __init__(
        self,
        config: Config,
        sockets: list[socket.socket],
        stop_within_s: float,
        reread_keys_on_hup: bool = False,
    ) -> None:
        super().__init__(config, sockets)
        self._stop_within_s = stop_within_s
        self._reread_keys_on_hup = reread_keys_on_hup

    def handle_signals(self) -> None:
        # SIGHUP is blocked in this thread (`hold_sighup`): taken from the pending set, or
        # remembered if it came before uvicorn's handler (or another thread caught it).
        if self._reread_keys_on_hup:
            pending = signal.SIGHUP in signal.sigpending()
            if pending:
                signal.sigtimedwait({signal.SIGHUP}, 0)
            if sighup.take() or pending:
                self.handle_hup()
        super().handle_signals()

    def handle_hup(self) -> None:
        if not self._reread_keys_on_hup:  # no key file: a worker would die of the signal
            log.info("SIGHUP: no key file to re-read (GATEWAY_API_KEYS_FILE); ignored")
            return
        log.info("SIGHUP: each worker re-reads the key file")
        self._signal_workers(signal.SIGHUP)

    def terminate_all(self) -> None:
        # No worker is started from now on: our copy of the socket must not keep it open.
        for sock in self.sockets:
            sock.close()
        for process in self.processes:
            if process.exitcode is None and process.pid is not None:
                os.kill(process.pid, signal.SIGTERM)

    def join_all(self) -> None:
        deadline = time.monotonic() + self._stop_within_s
        while any(p.process.is_alive() for p in self.processes):
            for sig in tuple(self.signal_queue):  # a second SIGTERM, or SIGINT: drain no more
                self.signal_queue.remove(sig)
                if sig in (signal.SIGTERM, signal.SIGINT):
                    self._signal_workers(sig)
            if time.monotonic() > deadline:
                for process in self.processes:
                    if process.process.is_alive():
                        log.error("worker %s outlived its shutdown: killed", process.pid)
                        process.process.kill()
                deadline = float("inf")
            for process in self.processes:
                process.process.join(0.1)
        for process in self.processes:
            process.parent_conn.close()
            process.child_conn.close()

    def _signal_workers(self, sig: int) -> None:
        for process in self.processes:
            if process.process.is_alive() and process.pid is not None:
                os.kill(process.pid, sig)


def hold_sighup(reread_keys: bool) -> None:
    """SIGHUP until someone handles it: held when there is a key file to re-read
    (`access.sighup`: caught, remembered and blocked, until the key registry or the
    supervisor answers it), else ignored (a stray one must not stop the gateway)."""
    if reread_keys:
        sighup.hold()
    else:
        signal.signal(signal.SIGHUP, signal.SIG_IGN)


def run(app: str, *, stop_within_s: float, reread_keys_on_hup: bool, **kwargs: Any) -> None:
    """`uvicorn.run(app, **kwargs)` with `DrainingMultiprocess` for several workers, which
    waits `stop_within_s` (the drain delay plus the grace) before it kills a worker and hands
    SIGHUP on to the workers when `reread_keys_on_hup`; `kwargs` may hold `EdgeConfig`'s."""
    hold_sighup(reread_keys_on_hup)
    config = EdgeConfig(app, **kwargs)
    if config.workers <= 1:
        config.load_app()
        server = Server(config=config)
        with contextlib.suppress(KeyboardInterrupt):
            server.run()
        if not server.started:
            sys.exit(STARTUP_FAILURE)
        return
    sock = config.bind_socket()
    supervisor = DrainingMultiprocess(
        config, [sock], stop_within_s + STRAGGLER_MARGIN_S, reread_keys_on_hup
    )
    try:
        with contextlib.suppress(KeyboardInterrupt):
            supervisor.run()
    finally:
        sock.close()
    if any(p.exitcode == STARTUP_FAILURE for p in supervisor.processes):
        sys.exit(STARTUP_FAILURE)  # a worker could not start: so would its replacements
