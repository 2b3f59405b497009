"""Which client headers travel on to the backend."""

from __future__ import annotations

from collections.abc import Mapping

PROPAGATED_HEADERS = ("traceparent", "tracestate")


def propagated(headers: Mapping[str, str]) -> dict[str, str]:
    """The W3C trace context the client sent, to forward to the backend."""
    return {name: headers[name] for name in PROPAGATED_HEADERS if name in headers}
