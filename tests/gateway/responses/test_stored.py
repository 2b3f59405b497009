"""Stored responses as the store keeps them: what the gateway writes reads back; anything
else under a response's key reads as absent, with one warning."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from gateway.responses.stored import decode, encode

RESPONSE: dict[str, Any] = {
    "id": "resp_1",
    "object": "response",
    "status": "completed",
    "output": [{"type": "message", "id": "msg_1", "role": "assistant", "content": []}],
}
ITEMS = [{"type": "message", "role": "user", "content": "Hi"}]


def test_what_is_written_reads_back_with_its_output_after_its_input() -> None:
    """The response and its items (input, then output) come back as written."""
    stored = decode(encode(RESPONSE, ITEMS), "resp_1")
    assert stored == {"response": RESPONSE, "items": [*ITEMS, *RESPONSE["output"]]}


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        (b"not json{", "not JSON"),
        (b"\xff\xfe", "not JSON"),
        (b"[1, 2]", "not an object"),
        (b'{"response": {"id": "x"}}', "no response object"),
        (b'{"response": {"id": "x", "object": "response", "output": []}, "items": []}', "id"),
        (b'{"response": {"id": "resp_1", "object": "response", "output": 1}}', "output"),
        (b'{"response": {"id": "resp_1", "object": "response", "output": [1]}}', "output"),
        (b'{"response": {"id": "resp_1", "object": "response", "output": []}}', "item list"),
        (
            b'{"response": {"id": "resp_1", "object": "response", "output": [{}]}, "items": []}',
            "fewer items",
        ),
    ],
)
def test_anything_else_is_absent_with_one_warning(
    raw: bytes, problem: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A value that does not decode or lacks the written shape is None, logged once as a
    warning naming the id and what is wrong, with no traceback."""
    with caplog.at_level(logging.WARNING, "gateway.responses"):
        assert decode(raw, "resp_1") is None
    [record] = caplog.records
    assert record.levelno == logging.WARNING and record.exc_info is None
    assert "resp_1" in record.getMessage() and problem in record.getMessage()
