"""The one line per request, written by a background thread.

Building a `logging.LogRecord` costs 15-30 us (caller lookup, thread and process info, the
`extra` merge); at thousands of requests per second that is a visible share of the event
loop. The request path only puts the line's fields on a queue; a daemon thread makes the
record and hands it to the configured handlers.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Mapping

from obs.logs import REQUEST_MESSAGE

CLOSE_TIMEOUT_S = 5.0
"""How long closing waits for the access lines still queued to reach the log handlers."""


class AccessLog:
    """Queues request lines for `logger` (INFO); `flush()` waits until all were handled."""

    def __init__(self, logger: logging.Logger) -> None:
        self._logger = logger
        self._queue: queue.Queue[Mapping[str, object] | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    @property
    def enabled(self) -> bool:
        return self._logger.isEnabledFor(logging.INFO)

    def submit(self, fields: Mapping[str, object]) -> None:
        if self._thread is None:
            self._start()
        self._queue.put(fields)

    def flush(self) -> None:
        """Until every submitted line went to the handlers (tests, shutdown)."""
        self._queue.join()

    def close(self) -> None:
        thread = self._thread
        if thread is not None:
            self._queue.put(None)
            thread.join(timeout=CLOSE_TIMEOUT_S)
            self._thread = None

    def _start(self) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="access-log", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        logger = self._logger
        while True:
            fields = self._queue.get()
            try:
                if fields is None:
                    return
                record = logger.makeRecord(
                    logger.name,
                    logging.INFO,
                    __file__,
                    0,
                    REQUEST_MESSAGE,
                    (),
                    None,
                    extra=dict(fields),
                )
                logger.handle(record)
            except Exception:  # a broken handler must not kill the writer
                logging.getLogger("gateway").exception("writing an access log line failed")
            finally:
                self._queue.task_done()
