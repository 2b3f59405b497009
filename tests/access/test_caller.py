"""The caller without access control: one tenant per credential, ids unchanged from before
keys existed (so GATEWAY_PRIORITY_BY_TENANT mappings keep working)."""

from __future__ import annotations

import hashlib

from access.caller import ANONYMOUS_TENANT, Caller, KeyLimits, bearer_token, unverified_caller


def test_tenant_per_credential() -> None:
    """Different tokens are different tenants; no token is the anonymous tenant."""
    assert unverified_caller("Bearer a").tenant != unverified_caller("Bearer b").tenant
    assert unverified_caller(None).tenant == unverified_caller("").tenant == ANONYMOUS_TENANT
    assert unverified_caller("Bearer a") == unverified_caller("bearer a")


def test_tenant_ids_are_the_token_hash() -> None:
    """The tenant is the first 32 hex digits of the SHA-256 of the credential."""
    assert unverified_caller("Bearer a").tenant == hashlib.sha256(b"a").hexdigest()[:32]
    basic = unverified_caller("Basic dXNlcg==").tenant
    assert basic == hashlib.sha256(b"Basic dXNlcg==").hexdigest()[:32]


def test_unverified_callers_are_unlimited() -> None:
    """Without keys nothing is limited and every model is allowed."""
    caller = unverified_caller("Bearer a")
    assert caller.key_id is None and caller.priority is None and caller.may_use("any")
    assert caller.limits == KeyLimits()
    assert not Caller("t", models=frozenset({"a"})).may_use("b")


def test_bearer_token_needs_the_bearer_scheme() -> None:
    """Only `Bearer <token>` (the scheme in any case) yields a token; a bare value, another
    scheme or an empty token yield none."""
    assert bearer_token("Bearer k") == bearer_token("bearer k") == bearer_token("BEARER  k") == "k"
    for header in (None, "", "k", "Basic k", "Bearer", "Bearer ", "Bearerk"):
        assert bearer_token(header) is None, header
