"""Which client headers travel on to the backend."""

from __future__ import annotations

from starlette.datastructures import Headers

_PROPAGATED = {b"traceparent": "traceparent", b"tracestate": "tracestate"}


def propagated(headers: Headers) -> dict[str, str]:
    """The W3C trace context the client sent, to forward to the backend (one pass)."""
    found: dict[str, str] = {}
    for name, value in headers.raw:
        key = _PROPAGATED.get(name)
        if key is not None:
            found[key] = value.decode("latin-1")
    return found
