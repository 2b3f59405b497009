"""access/key_limits.py: a caller's limits, its key's then its tenant's, filed under one tag."""

from __future__ import annotations

from access.caller import Caller, KeyLimits
from access.key_limits import DAY_S, MINUTE_S, caller_limits, whose


def test_the_keys_limits_come_first_then_the_tenants_under_the_tenants_tag() -> None:
    """Every limit of a tenant with limits is filed under the tenant's hash tag, so one Redis
    script can decide them together; each says its period and owner."""
    caller = Caller(
        "acme", key_id="0123456789ab", limits=KeyLimits(10, None, 1000),
        tenant_limits=KeyLimits(None, 500),
    )  # fmt: skip
    limits = caller_limits(caller)
    assert [(lim.name, lim.owner, lim.period_s) for lim in limits] == [
        ("requests_per_minute", "key:0123456789ab", MINUTE_S),
        ("tokens_per_day", "key:0123456789ab", DAY_S),
        ("tokens_per_minute", "tenant:acme", MINUTE_S),
    ]
    assert {lim.tag for lim in limits[:2]} == {"tenant:acme"}


def test_a_key_without_limits_has_none_and_no_tag_without_tenant_limits() -> None:
    """No limits configured: nothing to decide; a key's own limits need no shared tag."""
    assert caller_limits(Caller("acme", key_id="0123456789ab")) == ()
    (only,) = caller_limits(Caller("acme", key_id="0123456789ab", limits=KeyLimits(5)))
    assert only.tag == ""


def test_whose_names_the_key_by_its_name_else_its_id_and_the_tenant() -> None:
    """Error messages name the owner of the limit that refused."""
    named = Caller("acme", key_id="0123456789ab", name="ci", tenant_limits=KeyLimits(5))
    key, tenant = caller_limits(Caller("acme", key_id="0123456789ab", limits=KeyLimits(5),
                                       tenant_limits=KeyLimits(5)))  # fmt: skip
    assert whose(named, key) == "API key ci"
    assert whose(Caller("acme", key_id="0123456789ab"), key) == "API key 0123456789ab"
    assert whose(named, tenant) == "tenant acme"
