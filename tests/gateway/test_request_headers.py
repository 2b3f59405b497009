"""The headers the gateway acts on, found in one pass; trace ids from traceparent."""

from __future__ import annotations

import pytest

from gateway.request_headers import (
    ConflictingHeader,
    RepeatedAuthorization,
    as_sent,
    relevant_headers,
    trace_context,
    trace_id_of,
)

TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def test_relevant_headers_keeps_only_known_names() -> None:
    """Known headers are decoded by lowercase name; everything else is left out."""
    raw = [
        (b"content-type", b"application/json"),
        (b"authorization", b"Bearer k"),
        (b"x-priority", b"batch"),
        (b"traceparent", TRACEPARENT.encode()),
    ]
    assert relevant_headers(raw) == {
        "authorization": "Bearer k",
        "x-priority": "batch",
        "traceparent": TRACEPARENT,
    }


def test_trace_context_forwards_only_w3c_headers() -> None:
    """Only traceparent and tracestate travel to the backend."""
    headers = {"authorization": "Bearer k", "traceparent": TRACEPARENT, "tracestate": "a=b"}
    assert trace_context(headers) == {"traceparent": TRACEPARENT, "tracestate": "a=b"}


def test_trace_id_of_a_valid_traceparent() -> None:
    """A well-formed traceparent yields its trace id."""
    assert trace_id_of(TRACEPARENT) == "4bf92f3577b34da6a3ce929d0e0e4736"


@pytest.mark.parametrize(
    "value",
    [
        None,
        "",
        "00-xyz",
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
    ],
)
def test_trace_id_of_malformed_is_none(value: str | None) -> None:
    """Anything that is not a valid traceparent gives no trace id."""
    assert trace_id_of(value) is None


@pytest.mark.parametrize(
    "values", [(b"Bearer wrong", b"Bearer right"), (b"Bearer right", b"Bearer wrong")]
)
def test_a_repeated_authorization_is_400_whatever_the_order(values: tuple[bytes, bytes]) -> None:
    """Two Authorization headers are a 400 in either order, never the first or last one."""
    raw = [(b"authorization", values[0]), (b"x-priority", b"batch"), (b"authorization", values[1])]
    with pytest.raises(RepeatedAuthorization) as info:
        relevant_headers(raw)
    assert info.value.status == 400 and info.value.type == "invalid_request_error"
    assert b"right" not in info.value.to_json()


@pytest.mark.parametrize(
    ("name", "param"),
    [
        (b"x-priority", "X-Priority"),
        (b"x-prompt-version", "X-Prompt-Version"),
        (b"x-request-timeout-ms", "X-Request-Timeout-Ms"),
    ],
)
def test_a_single_valued_header_repeated_with_another_value_is_400(name: bytes, param: str) -> None:
    """Two different values of one of the gateway's own headers are a 400 naming it (either
    would let the headers' order decide); the same value twice is that value."""
    with pytest.raises(ConflictingHeader) as info:
        relevant_headers([(name, b"1"), (name, b"2")])
    assert info.value.status == 400 and info.value.param == param
    assert relevant_headers([(name, b"1"), (name, b"1")]) == {name.decode(): "1"}


def test_the_lines_of_a_list_valued_header_are_one_list() -> None:
    """RFC 9110: `Cache-Control` on several lines is one list, so a `no-store` on a line of its
    own counts; so is `tracestate`."""
    raw = [
        (b"cache-control", b"no-store"),
        (b"tracestate", b"a=1"),
        (b"cache-control", b"max-age=600"),
        (b"traceparent", TRACEPARENT.encode()),
        (b"tracestate", b"b=2"),
    ]
    assert relevant_headers(raw) == {
        "cache-control": "no-store, max-age=600",
        "tracestate": "a=1, b=2",
        "traceparent": TRACEPARENT,
    }


def test_two_traceparents_are_no_trace_context() -> None:
    """W3C Trace Context: several traceparents are invalid; a new trace starts, and the
    tracestate goes with them."""
    other = TRACEPARENT.replace("01", "00")
    raw = [(b"traceparent", TRACEPARENT.encode()), (b"tracestate", b"a=1")]
    assert relevant_headers([*raw, (b"traceparent", other.encode())]) == {}


def test_as_sent_undoes_the_servers_latin_1_decoding() -> None:
    """UTF-8 comes back as written; bytes that are no UTF-8 are shown escaped."""
    assert as_sent("caf\u00c3\u00a9") == "caf\u00e9"
    assert as_sent("plain") == "plain"
    assert as_sent("\u00ff") == "\\xff"
