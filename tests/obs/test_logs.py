from __future__ import annotations

import ast
import io
import logging
import logging.config
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from core.env import SettingsError
from obs.logs import (
    ACCESS_LOGGER,
    BackgroundHandler,
    JsonFormatter,
    TextFormatter,
    configure_logging,
    dropped_records,
    log_format_from_env,
    logging_config,
)

ROOT = Path(__file__).resolve().parents[2]
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"


@pytest.fixture
def captured() -> Iterator[tuple[logging.Logger, io.StringIO, logging.StreamHandler[io.StringIO]]]:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    logger = logging.getLogger("tests.obs.logs")
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    yield logger, stream, handler
    logger.removeHandler(handler)


def lines(stream: io.StringIO) -> list[dict[str, object]]:
    return [orjson.loads(line) for line in stream.getvalue().splitlines()]


def test_json_line_carries_ids_from_extra(
    captured: tuple[logging.Logger, io.StringIO, logging.Handler],
) -> None:
    """One JSON object per record with time, level, logger, message and the extra ids."""
    logger, stream, _ = captured
    logger.warning(
        "backend %s slow", "a", extra={"request_id": "req-1", "trace_id": TRACE_ID, "span_id": "b7"}
    )
    (entry,) = lines(stream)
    assert entry["level"] == "warning"
    assert entry["logger"] == "tests.obs.logs"
    assert entry["message"] == "backend a slow"
    assert (entry["request_id"], entry["trace_id"], entry["span_id"]) == ("req-1", TRACE_ID, "b7")
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", str(entry["time"]))
    assert set(entry) == {"time", "level", "logger", "message", "request_id", "trace_id", "span_id"}


def test_exception_stays_on_one_line(
    captured: tuple[logging.Logger, io.StringIO, logging.Handler],
) -> None:
    """A traceback goes into an `exception` key; the record is still a single line."""
    logger, stream, _ = captured
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        logger.exception("failed", extra={"request_id": "req-2"})
    assert len(stream.getvalue().splitlines()) == 1
    (entry,) = lines(stream)
    assert "RuntimeError: boom" in str(entry["exception"])
    assert entry["request_id"] == "req-2"


def test_text_format_appends_fields() -> None:
    """The text format keeps the classic line and appends extra fields as key=value."""
    record = logging.LogRecord("gateway", logging.INFO, __file__, 1, "request", None, None)
    record.request_id = "req-4"
    record.stages = {"backend": 1.5}
    line = TextFormatter().format(record)
    assert line.endswith('INFO gateway: request request_id=req-4 stages="{\\"backend\\":1.5}"')


def test_text_format_escapes_line_breaks_clients_could_send() -> None:
    """A model name with a line break stays on its line, escaped: no forged record."""
    forged = "evil\nINFO gateway.access: request request_id=FORGED status=200"
    record = logging.LogRecord("gateway", logging.WARNING, __file__, 1, "model %s", (forged,), None)
    record.model = forged
    line = TextFormatter().format(record)
    assert "\n" not in line
    assert line.count("evil\\nINFO") == 2


_PAIR = re.compile(r' (\w+)=("(?:[^"\\]|\\.)*"|[^ "]+)')


def _parsed_fields(line: str, message: str) -> dict[str, str]:
    """The key=value fields after `message` in a text line, quoted values read back as the
    string literals they are; the whole tail must be fields."""
    tail = line.split(f": {message}", 1)[1]
    pairs = _PAIR.findall(tail)
    assert "".join(f" {k}={v}" for k, v in pairs) == tail, tail
    return {k: ast.literal_eval(v) if v.startswith('"') else v for k, v in pairs}


@pytest.mark.parametrize(
    "model",
    [
        "x status=200 tenant=victim",
        'x" status="200',
        "a\\ b",
        "trailing\\",
        "line\nbreak key=v",
        "",
        "tab\there",
        "\u2028sep",
        "plain-model_1.5",
    ],
)
def test_text_fields_parse_back_to_exactly_the_fields_written(model: str) -> None:
    """A client's model name with spaces, quotes, `=`, backslashes or line breaks cannot pass
    for fields of its own: the line parses back to exactly the fields written."""
    record = logging.LogRecord(ACCESS_LOGGER, logging.INFO, __file__, 1, "request", None, None)
    fields = {"request_id": "req-5", "model": model, "status": 404, "tenant": "t1"}
    record.__dict__.update(fields)
    line = TextFormatter().format(record)
    assert "\n" not in line and len(line.splitlines()) == 1
    assert _parsed_fields(line, "request") == {k: str(v) for k, v in fields.items()}


def test_plain_values_are_not_quoted() -> None:
    """Ids, numbers and model names without special characters stay bare."""
    record = logging.LogRecord(ACCESS_LOGGER, logging.INFO, __file__, 1, "request", None, None)
    record.__dict__.update({"model": "llama-3.1-8b", "status": 200, "duration_ms": 1.5})
    line = TextFormatter().format(record)
    assert line.endswith("request model=llama-3.1-8b status=200 duration_ms=1.5")


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, "json"),
        ({"GATEWAY_LOG_FORMAT": "text"}, "text"),
        ({"GATEWAY_LOG_FORMAT": "JSON"}, "json"),
    ],
)
def test_log_format_from_env(env: dict[str, str], expected: str) -> None:
    """GATEWAY_LOG_FORMAT selects json (default) or text."""
    assert log_format_from_env(env) == expected


def test_log_format_invalid() -> None:
    """Another GATEWAY_LOG_FORMAT is a SettingsError naming the variable."""
    with pytest.raises(SettingsError, match="GATEWAY_LOG_FORMAT"):
        log_format_from_env({"GATEWAY_LOG_FORMAT": "xml"})


def test_configure_logging_routes_uvicorn_through_the_json_handler(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """configure_logging() makes the root and uvicorn loggers write JSON lines to stderr."""
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    try:
        configure_logging("info", "json")
        logging.getLogger("uvicorn.error").info("started", extra={"request_id": "boot"})
        logging.getLogger("gateway.x").debug("hidden")
        for handler in root.handlers:
            handler.close()  # the writer thread writes out what is queued
        err = capsys.readouterr().err.splitlines()
        entries = [orjson.loads(line) for line in err]
        assert [e["message"] for e in entries] == ["started"]
        assert entries[0]["logger"] == "uvicorn.error"
    finally:
        for handler in root.handlers:
            handler.close()
        root.handlers[:], root.level = saved
        for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
            logging.getLogger(name).setLevel(logging.NOTSET)


def test_logging_config_is_a_valid_dict_config() -> None:
    """The dictConfig used for uvicorn workers names the text formatter when asked."""
    config = logging_config("warning", "text")
    assert config["formatters"]["default"]["()"] == "obs.logs.TextFormatter"
    assert config["root"]["level"] == "WARNING"
    assert ACCESS_LOGGER == "gateway.access"


class StalledStream(io.StringIO):
    """A stderr whose reader stalls: each write waits until `release` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.writing = threading.Event()
        self.release = threading.Event()

    def write(self, text: str) -> int:
        self.writing.set()
        self.release.wait(WAIT_S)
        return super().write(text)


WAIT_S = 30.0


def _record() -> logging.LogRecord:
    return logging.LogRecord(ACCESS_LOGGER, logging.INFO, __file__, 1, "request", None, None)


def test_a_stalled_stderr_bounds_the_queue_and_counts_what_it_drops() -> None:
    """With the writer stuck on stderr, records past the queue's capacity are dropped and
    counted at once (emitting never waits), and the ones queued are written once it reads."""
    stream = StalledStream()
    handler = BackgroundHandler(stream, capacity=5)
    handler.setFormatter(JsonFormatter())
    try:
        handler.handle(_record())
        assert stream.writing.wait(WAIT_S)  # the writer holds record 0, blocked
        for _ in range(8):
            handler.handle(_record())
        assert handler.dropped == 3
        stream.release.set()
        assert handler.drain(WAIT_S)
        assert len(stream.getvalue().splitlines()) == 6
    finally:
        stream.release.set()
        handler.close()


def test_drain_gives_up_on_a_dead_stderr() -> None:
    """Draining is bounded: a stderr nobody reads makes it return False, not hang."""
    stream = StalledStream()
    handler = BackgroundHandler(stream)
    try:
        handler.handle(_record())
        assert stream.writing.wait(WAIT_S)
        assert handler.drain(0.01) is False
    finally:
        stream.release.set()
        handler.close()


def test_dropped_records_sums_the_root_handlers() -> None:
    """`dropped_records` counts the drops of the background handlers on the root logger."""
    root = logging.getLogger()
    stream = StalledStream()
    handler = BackgroundHandler(stream, capacity=1)
    root.addHandler(handler)
    try:
        before = dropped_records()
        handler.handle(_record())
        assert stream.writing.wait(WAIT_S)
        for _ in range(3):
            handler.handle(_record())
        assert dropped_records() - before == 2
    finally:
        root.removeHandler(handler)
        stream.release.set()
        handler.close()


_SIGTERM_CHILD = """
import logging, signal, sys
from obs.logs import JsonFormatter, BackgroundHandler, flush_logs_before_sigterm
handler = BackgroundHandler()
handler.setFormatter(JsonFormatter())
logging.getLogger().addHandler(handler)
logging.getLogger().setLevel(logging.INFO)
flush_logs_before_sigterm(60.0)
log = logging.getLogger("gateway.access")
for i in range(9_000):  # within the queue's capacity: none dropped
    log.info("request", extra={"line": i})
signal.raise_signal(signal.SIGTERM)  # as uvicorn does once it has shut down
"""


def test_sigterm_writes_out_the_queued_records_then_dies_of_it(tmp_path: Path) -> None:
    """A process dying of SIGTERM first writes every queued record (atexit never runs then),
    and still dies of the signal."""
    err = tmp_path / "stderr"
    with err.open("w") as stderr:
        result = subprocess.run(
            [sys.executable, "-c", _SIGTERM_CHILD],
            stderr=stderr,
            timeout=120,
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            check=False,
        )
    assert result.returncode == -signal.SIGTERM
    assert err.read_text().count('"line":') == 9_000
