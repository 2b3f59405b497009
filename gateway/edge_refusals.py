"""The answers the HTTP protocol gives on its own, before any app sees a request: a head over
the limits, one that never completes, one that does not parse, a missing or repeated Host, a
connection over the cap. Each is the OpenAI error envelope with an `x-request-id` and
`Server-Timing`, like every other answer, closes the connection, and is reported like every
other answer: one access-log line and one count, under the route `other`."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

import orjson

from gateway.observing import OTHER_ROUTE
from obs.observer import Observer
from obs.request_record import RequestRecord

log = logging.getLogger("gateway")


@dataclass(frozen=True, slots=True)
class Refusal:
    """One kind of protocol-level answer: its status and OpenAI error code and message."""

    status: int
    code: str
    message: str
    retry_after_s: int | None = None

    def response(
        self, request_id: str, elapsed_s: float, default_headers: list[tuple[bytes, bytes]]
    ) -> bytes:
        """The whole HTTP/1.1 response, `default_headers` (uvicorn's date and server) first."""
        body = orjson.dumps(
            {
                "error": {
                    "message": self.message,
                    "type": "server_error" if self.status >= 500 else "invalid_request_error",
                    "param": None,
                    "code": self.code,
                }
            }
        )
        lines = [b"HTTP/1.1 %d %s" % (self.status, HTTPStatus(self.status).phrase.encode())]
        lines += [name + b": " + value for name, value in default_headers]
        lines += [
            b"content-type: application/json",
            b"x-request-id: " + request_id.encode(),
            b"server-timing: total;dur=%.2f" % (elapsed_s * 1000),
        ]
        if self.retry_after_s is not None:
            lines.append(b"retry-after: %d" % self.retry_after_s)
        lines += [b"connection: close", b"content-length: %d" % len(body), b"", body]
        return b"\r\n".join(lines)

    def report(self, app_state: Mapping[str, Any], request_id: str, elapsed_s: float) -> None:
        """Hand the answer to the app's observer (in its lifespan state), if it has one."""
        observer: Observer | None = app_state.get("observer")
        if observer is None:
            return
        ended = time.monotonic()
        wall_ns = time.time_ns() - int(elapsed_s * 1e9)
        record = RequestRecord("", OTHER_ROUTE, ended - elapsed_s, wall_ns)
        record.request_id = request_id
        record.note_failure(self.code, status=self.status)
        try:
            observer.finish(record, self.status, ended)
        except Exception:  # reporting must never break the protocol
            log.exception("observing a refused request failed")


HEAD_TOO_LARGE = Refusal(
    431,
    "request_header_fields_too_large",
    "The request head (request line and headers) is over the gateway's limit.",
)
HEAD_TIMEOUT = Refusal(408, "request_timeout", "The request head did not arrive in time.")
INVALID_HTTP = Refusal(400, "invalid_http_request", "The request is not valid HTTP/1.1.")
BAD_HOST = Refusal(
    400,
    "invalid_host_header",
    "An HTTP/1.1 request must carry exactly one Host header, and it must not be empty.",
)
TOO_MANY_CONNECTIONS = Refusal(
    503,
    "too_many_connections",
    "The gateway has too many open connections; retry shortly.",
    retry_after_s=1,
)
