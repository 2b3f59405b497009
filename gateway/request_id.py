"""The id of one request: in `x-request-id`, the access log line and the answer's own id."""

from __future__ import annotations

import os


def new_request_id() -> str:
    """24 hex digits (96 random bits)."""
    return os.urandom(12).hex()
