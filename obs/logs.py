"""Logging: JSON lines (default) or text, and the one info line per request.

Structured fields travel as `extra=` keys of the record; the JSON formatter writes every
non-standard record attribute as a key, so `request_id`, `trace_id`, `span_id` and the
request line's fields are real JSON keys, never interpolated into the message. Prompt and
answer text are never logged here.
"""

from __future__ import annotations

import atexit
import logging
import logging.config
import queue
import re
import signal
import sys
import threading
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from types import FrameType
from typing import Any, Literal, TextIO

import orjson

from core.env import env_choice

LogFormat = Literal["json", "text"]
ACCESS_LOGGER = "gateway.access"
REQUEST_MESSAGE = "request"
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

# Attributes every LogRecord has (plus those the formatting machinery adds); anything else
# on a record came from `extra=`. uvicorn adds `color_message`, a duplicate of the message.
_STANDARD = frozenset(
    {
        *logging.LogRecord("", 0, "", 0, "", None, None).__dict__,
        "message",
        "asctime",
        "color_message",
        "taskName",
    }
)


def log_format_from_env(environ: Mapping[str, str]) -> LogFormat:
    """GATEWAY_LOG_FORMAT: json (default) or text; SettingsError otherwise."""
    value = env_choice(environ, "GATEWAY_LOG_FORMAT", "json", ("json", "text"))
    return "text" if value == "text" else "json"


def _fields(record: logging.LogRecord) -> dict[str, Any]:
    return {k: v for k, v in record.__dict__.items() if k not in _STANDARD}


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, then the record's extra keys."""

    _second = -1
    _prefix = ""

    def _time(self, created: float) -> str:
        """UTC ISO 8601 with milliseconds; the part up to the second is reused within it."""
        second = int(created)
        if second != self._second:
            self._prefix = datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%S")
            self._second = second
        return f"{self._prefix}.{int((created - second) * 1000):03d}Z"

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": self._time(record.created),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        entry.update(_fields(record))
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        if record.stack_info:
            entry["stack"] = self.formatStack(record.stack_info)
        return orjson.dumps(entry, default=str).decode()


class TextFormatter(logging.Formatter):
    """The classic line, with the record's extra keys appended as key=value: a value with a
    space, a quote, a backslash, an `=` or a control character (or an empty one) is quoted as a
    Python string literal, so a client's text (a model named `x status=200`) can never pass for
    fields of its own, and a line parses back to exactly the fields written."""

    def __init__(self) -> None:
        super().__init__(TEXT_FORMAT)

    def formatMessage(self, record: logging.LogRecord) -> str:
        # Messages quote what clients send (a model name): a line break would forge a record.
        return super().formatMessage(record).translate(_ESCAPES)

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        fields = _fields(record)
        if not fields:
            return line
        pairs = " ".join(f"{k}={_value(_text(v))}" for k, v in fields.items())
        head, sep, tail = line.partition("\n")  # keep a traceback after the fields
        return f"{head} {pairs}{sep}{tail}"


# Control characters (and the other line breaks of `str.splitlines`) as Python writes them in
# a string literal (`\n`, `\x1b`, `\u2028`).
_ESCAPES = {
    code: chr(code).encode("unicode_escape").decode()
    for code in (*range(32), *range(127, 160), 0x2028, 0x2029)
}
_QUOTED_ESCAPES = {**_ESCAPES, ord("\\"): "\\\\", ord('"'): '\\"'}
_NEEDS_QUOTES = re.compile(r'[\s"=\\\x00-\x1f\x7f-\x9f\u2028\u2029]')


def _value(text: str) -> str:
    """`text` bare when it reads back unambiguously, else quoted with escapes."""
    if text and _NEEDS_QUOTES.search(text) is None:
        return text
    return '"' + text.translate(_QUOTED_ESCAPES) + '"'


def _text(value: object) -> str:
    if isinstance(value, Mapping):
        return orjson.dumps(value, default=str).decode()
    return str(value)


def logging_config(level: str, fmt: LogFormat) -> dict[str, Any]:
    """A `logging.config.dictConfig` dict; pass it as uvicorn's `log_config` so that every
    worker process (spawned, so it re-applies it) logs in the same format."""
    formatter = "obs.logs.JsonFormatter" if fmt == "json" else "obs.logs.TextFormatter"
    handler = {"()": "obs.logs.background_stderr_handler", "formatter": "default"}
    level = level.upper()
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"default": {"()": formatter}},
        "handlers": {"default": handler},
        "root": {"handlers": ["default"], "level": level},
        "loggers": {
            # uvicorn's own config gives these handlers of their own; route them to ours.
            "uvicorn": {"handlers": [], "level": level, "propagate": True},
            "uvicorn.error": {"handlers": [], "level": level, "propagate": True},
            "uvicorn.access": {"handlers": [], "level": level, "propagate": True},
        },
    }


QUEUE_CAPACITY = 10_000
"""Records waiting for the writer thread at most (~2 KB each: ~20 MB while stderr is stalled);
past it a record is dropped and counted (`dropped_records`), never waited for."""

CLOSE_TIMEOUT_S = 5.0
"""How long closing a handler (at a normal exit) waits for its queued records to be written."""


class BackgroundHandler(logging.Handler):
    """Hands records to a thread that formats and writes them: a full stderr pipe must never
    stall the event loop, and one line per request should cost the request path little. At
    most `capacity` records wait; more are dropped and counted in `dropped`."""

    def __init__(self, stream: TextIO | None = None, capacity: int = QUEUE_CAPACITY) -> None:
        super().__init__()
        self._stream = sys.stderr if stream is None else stream
        self._capacity = capacity
        # SimpleQueue: a put costs a fraction of `queue.Queue`'s; the size check before it is
        # racy across threads by at most one record per thread, which a bound can afford.
        self._queue: queue.SimpleQueue[logging.LogRecord | threading.Event | None] = (
            queue.SimpleQueue()
        )
        self._drops = threading.Lock()
        self.dropped = 0
        self._closed = False
        self._writer = threading.Thread(target=self._write_all, name="log-writer", daemon=True)
        self._writer.start()
        atexit.register(self.close)

    def emit(self, record: logging.LogRecord) -> None:
        # Formatting happens in the writer thread, which also renders the exception.
        if self._queue.qsize() >= self._capacity:
            with self._drops:
                self.dropped += 1
            return
        self._queue.put(record)

    def _write_all(self) -> None:
        stream, pending = self._stream, self._queue
        while (item := pending.get()) is not None:
            if isinstance(item, threading.Event):  # a drain's marker: all before it written
                item.set()
                continue
            try:
                stream.write(self.format(item) + "\n")
                if pending.empty():
                    stream.flush()
            except Exception:
                self.handleError(item)

    def drain(self, timeout_s: float) -> bool:
        """Wait up to `timeout_s` for the records queued now to be written and flushed;
        whether they were (not when stderr's reader stalls that long, or is gone)."""
        if not self._writer.is_alive():
            return self._queue.empty()
        written = threading.Event()
        self._queue.put(written)
        return written.wait(timeout_s)

    def close(self) -> None:
        """Write out what is queued (waiting up to `CLOSE_TIMEOUT_S`), then stop the writer
        thread; one stuck on a dead stderr is left behind (a daemon, it cannot hold the exit)."""
        if not self._closed:
            self._closed = True
            self.drain(CLOSE_TIMEOUT_S)
            self._queue.put(None)
        super().close()


def background_stderr_handler() -> logging.Handler:
    """The handler `logging_config` installs (dictConfig factory)."""
    return BackgroundHandler()


def _background_handlers() -> list[BackgroundHandler]:
    return [h for h in logging.getLogger().handlers if isinstance(h, BackgroundHandler)]


def dropped_records() -> int:
    """Log records this process dropped so far because the writer was too far behind."""
    return sum(handler.dropped for handler in _background_handlers())


def flush_logs(timeout_s: float) -> bool:
    """Wait up to `timeout_s` in all for the root logger's queued records to be written;
    whether they were."""
    deadline = time.monotonic() + timeout_s
    written = True
    for handler in _background_handlers():
        written = handler.drain(max(0.0, deadline - time.monotonic())) and written
    return written


def flush_logs_before_sigterm(timeout_s: float) -> None:
    """Make a SIGTERM that would kill this process (no handler set: uvicorn re-raises it so
    after its graceful shutdown) first write out the queued log records, waiting up to
    `timeout_s`; the process still dies of the signal. Death by a signal skips `atexit`, so
    without this the records still queued were lost. A no-op off the main thread or when
    SIGTERM already has a handler."""
    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return

    def flush_then_die(sig: int, frame: FrameType | None) -> None:
        flush_logs(timeout_s)
        signal.signal(sig, signal.SIG_DFL)
        signal.raise_signal(sig)

    signal.signal(signal.SIGTERM, flush_then_die)


def configure_logging(level: str, fmt: LogFormat) -> None:
    """Configure the root logger of this process (stderr, one line per record)."""
    logging.config.dictConfig(logging_config(level, fmt))
