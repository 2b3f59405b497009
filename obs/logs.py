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
import logging.handlers
import queue
import re
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Literal

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


class _BackgroundHandler(logging.handlers.QueueHandler):
    """Hands records to a thread that formats and writes them: a full stderr pipe must never
    stall the event loop, and one line per request should cost the request path little."""

    def __init__(self) -> None:
        super().__init__(queue.SimpleQueue())
        self._target = logging.StreamHandler(sys.stderr)
        self._listener = logging.handlers.QueueListener(self.queue, self._target)
        self._listener.start()
        self._running = True
        atexit.register(self.close)

    def setFormatter(self, fmt: logging.Formatter | None) -> None:
        self._target.setFormatter(fmt)

    def prepare(self, record: logging.LogRecord) -> logging.LogRecord:
        # Formatting happens in the writer thread; keep the exception for it to render.
        return record

    def close(self) -> None:
        """Write out what is queued, then stop the writer thread."""
        if self._running:
            self._running = False
            self._listener.stop()
        self._target.close()
        super().close()


def background_stderr_handler() -> logging.Handler:
    """The handler `logging_config` installs (dictConfig factory)."""
    return _BackgroundHandler()


def configure_logging(level: str, fmt: LogFormat) -> None:
    """Configure the root logger of this process (stderr, one line per record)."""
    logging.config.dictConfig(logging_config(level, fmt))
