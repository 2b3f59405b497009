"""The request line, handed to a background writer thread and written as one JSON line."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator

import orjson
import pytest

from obs.access_log import AccessLog
from obs.logs import JsonFormatter


@pytest.fixture
def logger() -> Iterator[tuple[logging.Logger, io.StringIO]]:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    logger = logging.getLogger("tests.obs.access")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    yield logger, stream
    logger.removeHandler(handler)


def test_fields_become_keys_of_one_line(logger: tuple[logging.Logger, io.StringIO]) -> None:
    """Submitted fields are written by the writer thread as keys of one JSON line."""
    log, stream = logger
    access = AccessLog(log)
    access.submit({"request_id": "r1", "status": 200, "stages": {"parse": 0.2}})
    access.flush()
    access.close()
    (line,) = [orjson.loads(text) for text in stream.getvalue().splitlines()]
    assert line["message"] == "request" and line["level"] == "info"
    assert (line["request_id"], line["status"], line["stages"]) == ("r1", 200, {"parse": 0.2})


def test_disabled_below_info(logger: tuple[logging.Logger, io.StringIO]) -> None:
    """With info off the request path learns it from `enabled` and submits nothing."""
    log, _ = logger
    log.setLevel(logging.WARNING)
    assert not AccessLog(log).enabled


def test_a_failing_handler_does_not_stop_the_writer(
    logger: tuple[logging.Logger, io.StringIO],
) -> None:
    """A record the handlers cannot write is skipped; later lines still come out."""
    log, stream = logger
    access = AccessLog(log)
    access.submit({"message": "clashes with the record's own attribute"})
    access.submit({"request_id": "r2"})
    access.flush()
    access.close()
    assert '"request_id":"r2"' in stream.getvalue()
