"""Priority class from X-Priority and the tenant ceiling; the client's own timeout."""

from __future__ import annotations

import pytest

from access.caller import Caller, unverified_caller
from budgets.settings import BudgetSettings
from core.errors import InvalidRequest
from gateway.priority import client_timeout_s, request_priority

BATCH_KEY = "Bearer key-batch"
INTERACTIVE_KEY = "Bearer key-interactive"


def _tenant(authorization: str) -> str:
    return unverified_caller(authorization).tenant


def _priority(headers: dict[str, str], settings: BudgetSettings) -> str:
    return request_priority(headers, settings, unverified_caller(headers.get("authorization")))


def tenant_settings(default: str = "interactive") -> BudgetSettings:
    return BudgetSettings.from_env(
        {
            "GATEWAY_DEFAULT_PRIORITY": default,
            "GATEWAY_PRIORITY_BY_TENANT": (
                f"{_tenant(BATCH_KEY)}=batch;{_tenant(INTERACTIVE_KEY)}=interactive"
            ),
        }
    )


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("batch", "batch"), ("interactive", "interactive"), (" BATCH ", "batch")],
)
def test_header_picks_the_class(raw: str, expected: str) -> None:
    """X-Priority chooses the class, case- and whitespace-insensitively."""
    assert _priority({"x-priority": raw}, BudgetSettings()) == expected


def test_missing_header_uses_the_default() -> None:
    """Without X-Priority the configured default applies."""
    assert _priority({}, BudgetSettings()) == "interactive"
    assert _priority({}, BudgetSettings(default_priority="batch")) == "batch"


def test_missing_header_uses_the_tenant_mapping() -> None:
    """Without X-Priority a mapped tenant gets its class, over the default."""
    settings = tenant_settings(default="batch")
    assert _priority({"authorization": BATCH_KEY}, settings) == "batch"
    assert _priority({"authorization": INTERACTIVE_KEY}, settings) == "interactive"


def test_unmapped_tenant_uses_the_default() -> None:
    """A tenant absent from the mapping (or no token at all) gets the default."""
    settings = tenant_settings(default="batch")
    assert _priority({"authorization": "Bearer someone-else"}, settings) == "batch"
    assert _priority({}, settings) == "batch"


def test_anonymous_tenant_can_be_mapped() -> None:
    """Requests without a token belong to the 'anon' tenant, which can be mapped."""
    settings = BudgetSettings.from_env({"GATEWAY_PRIORITY_BY_TENANT": "anon=batch"})
    assert _priority({"x-priority": "interactive"}, settings) == "batch"


def test_batch_tenant_asking_interactive_stays_batch() -> None:
    """A tenant mapped to batch cannot raise itself to interactive."""
    settings = tenant_settings()
    headers = {"authorization": BATCH_KEY, "x-priority": "interactive"}
    assert _priority(headers, settings) == "batch"


def test_interactive_tenant_may_ask_for_batch() -> None:
    """A tenant allowed interactive may still lower itself to batch."""
    settings = tenant_settings()
    headers = {"authorization": INTERACTIVE_KEY, "x-priority": "batch"}
    assert _priority(headers, settings) == "batch"


def test_a_keys_class_is_its_ceiling() -> None:
    """A batch API key stays batch whatever it asks, and its ceiling wins over the tenant map."""
    settings = BudgetSettings.from_env({"GATEWAY_PRIORITY_BY_TENANT": "acme=interactive"})
    key = Caller("acme", key_id="0123456789ab", priority="batch")
    assert request_priority({"x-priority": "interactive"}, settings, key) == "batch"
    assert request_priority({}, settings, key) == "batch"
    open_key = Caller("acme", key_id="0123456789ab", priority="interactive")
    assert request_priority({"x-priority": "batch"}, settings, open_key) == "batch"


@pytest.mark.parametrize("raw", ["urgent", "", "high"])
def test_bad_priority_header_is_invalid_request(raw: str) -> None:
    """An unknown X-Priority value is a 400 naming the header."""
    with pytest.raises(InvalidRequest) as info:
        _priority({"x-priority": raw}, BudgetSettings())
    assert info.value.param == "X-Priority"
    assert info.value.status == 400
    assert "X-Priority" in info.value.message


def test_bad_priority_header_is_rejected_even_for_batch_tenants() -> None:
    """A mapped tenant still gets a 400 for a malformed X-Priority."""
    with pytest.raises(InvalidRequest) as info:
        _priority({"authorization": BATCH_KEY, "x-priority": "urgent"}, tenant_settings())
    assert info.value.param == "X-Priority"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("1500", 1.5), ("250.5", 0.2505), (" 2000 ", 2.0), ("1", 0.001)],
)
def test_client_timeout_parses_milliseconds(raw: str, expected: float) -> None:
    """X-Request-Timeout-Ms is read in milliseconds and returned in seconds."""
    assert client_timeout_s({"x-request-timeout-ms": raw}) == expected


def test_client_timeout_absent_is_none() -> None:
    """No X-Request-Timeout-Ms header means no client timeout."""
    assert client_timeout_s({}) is None
    assert client_timeout_s({"x-priority": "batch"}) is None


@pytest.mark.parametrize("raw", ["0", "-0", "-5", "abc", "", "nan", "NaN", "inf", "-inf", "1e400"])
def test_client_timeout_rejects_bad_values(raw: str) -> None:
    """Zero, negative, non-numeric, NaN and infinite timeouts are a 400 naming the header."""
    with pytest.raises(InvalidRequest) as info:
        client_timeout_s({"x-request-timeout-ms": raw})
    assert info.value.param == "X-Request-Timeout-Ms"
    assert info.value.status == 400
    assert "X-Request-Timeout-Ms" in info.value.message


def test_a_refused_header_is_quoted_as_its_client_wrote_it() -> None:
    """UTF-8 in a refused header (decoded as latin-1 by the server) is quoted as sent."""
    for word in ("高", "Высокий", "voilà"):  # cased letters, a trailing UTF-8 0xA0 byte
        sent = word.encode().decode("latin-1")  # what the ASGI server hands over
        with pytest.raises(InvalidRequest) as priority:
            _priority({"x-priority": sent}, BudgetSettings())
        assert f"got '{word}'" in priority.value.message
    timeout = "１００".encode().decode("latin-1")
    with pytest.raises(InvalidRequest) as refused:
        client_timeout_s({"x-request-timeout-ms": timeout})
    assert "got '１００'" in refused.value.message
