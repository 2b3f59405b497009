"""The few request headers the gateway acts on, found in one pass over the raw ASGI headers.

Starlette's `Headers.get` scans every header on each call; the pipeline asks for half a
dozen, so one pass into a small dict is cheaper and the rest of the path uses the dict.
"""

from __future__ import annotations

from collections.abc import Iterable

from core.errors import InvalidRequest

_WANTED = {
    name.encode(): name
    for name in (
        "authorization",
        "cache-control",
        "x-prompt-version",
        "x-priority",
        "x-request-timeout-ms",
        "traceparent",
        "tracestate",
    )
}
TRACE_CONTEXT = ("traceparent", "tracestate")
_AUTHORIZATION, _TRACEPARENT = "authorization", "traceparent"


def as_sent(value: str) -> str:
    """A header value as its client wrote it, for an error message: ASGI servers decode header
    bytes as latin-1, which shows UTF-8 text as mojibake ("é«\\x98" for "高")."""
    return value.encode("latin-1", "replace").decode("utf-8", "backslashreplace")


class RepeatedAuthorization(InvalidRequest):
    """More than one `Authorization` header: RFC 9110 makes it single-valued, and picking one
    would let the order of a client's (or a proxy's) headers choose the caller."""

    code = "duplicate_authorization_header"

    def __init__(self) -> None:
        super().__init__("Send one Authorization header; this request has several.")


class ConflictingHeader(InvalidRequest):
    """A single-valued header sent more than once with different values: taking either would
    let the order of a client's (or a proxy's) headers decide."""

    code = "conflicting_header"

    def __init__(self, name: str) -> None:
        super().__init__(
            f"Send one {name} header; this request has several with different values.",
            param=name,
        )


# RFC 9110 5.3: the lines of a list-valued field are one comma-separated list; a
# `no-store` on a line of its own must count (W3C Trace Context combines `tracestate` so).
_LISTS = frozenset({"cache-control", "tracestate"})
_SINGLE = {
    "x-prompt-version": "X-Prompt-Version",
    "x-priority": "X-Priority",
    "x-request-timeout-ms": "X-Request-Timeout-Ms",
}


def relevant_headers(raw: Iterable[tuple[bytes, bytes]]) -> dict[str, str]:
    """The headers the gateway uses, by lowercase name (ASGI servers lowercase names); the
    lines of a list-valued one joined; 400 for a repeated `Authorization`, or a single-valued
    header repeated with another value. Two `traceparent`s are no trace context (W3C: invalid,
    so a new trace starts), and without one `tracestate` means nothing."""
    found: dict[str, str] = {}
    for name, value in raw:
        key = _WANTED.get(name)
        if key is None:
            continue
        text = value.decode("latin-1")
        if key not in found:
            found[key] = text
        elif key in _LISTS:
            found[key] = f"{found[key]}, {text}"
        elif key == _AUTHORIZATION:
            raise RepeatedAuthorization
        elif key == _TRACEPARENT:
            found[key] = ""  # dropped below
        elif found[key] != text:
            raise ConflictingHeader(_SINGLE[key])
    if found.get(_TRACEPARENT) == "":
        for header in TRACE_CONTEXT:
            found.pop(header, None)
    return found


def trace_context(headers: dict[str, str]) -> dict[str, str]:
    """The W3C trace context the client sent, to forward to the backend."""
    return {name: headers[name] for name in TRACE_CONTEXT if name in headers}


def trace_id_of(traceparent: str | None) -> str | None:
    """The trace id of a W3C `traceparent` (`00-<32 hex>-<16 hex>-<2 hex>`), if well formed."""
    if traceparent is None or len(traceparent) != 55:
        return None
    parts = traceparent.split("-")
    if len(parts) != 4 or len(parts[1]) != 32 or parts[1] == "0" * 32:
        return None
    try:
        int(parts[1], 16)
    except ValueError:
        return None
    return parts[1].lower()
