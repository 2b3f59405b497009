"""Who is calling, as far as the gateway trusts it: the tenant whose caches, limits and audit
trail a request belongs to, and what its API key allows."""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass, field

from budgets.priority import Priority

ANONYMOUS_TENANT = "anon"


@dataclass(frozen=True, slots=True)
class KeyLimits:
    """A key's limits; None is unlimited."""

    requests_per_minute: int | None = None
    tokens_per_minute: int | None = None
    tokens_per_day: int | None = None
    max_tokens: int | None = None


@dataclass(frozen=True, slots=True)
class Caller:
    """The caller of one request.

    With access control on, it is an API key from the key set: `key_id` (the first 12 hex
    digits of the key's SHA-256, safe to log) and the tenant, class, models and limits the
    key was given. With access control off, the tenant is a hash of whatever bearer token
    was sent (so different tokens still never share cache entries) and nothing is limited.
    """

    tenant: str
    key_id: str | None = None
    name: str = ""
    priority: Priority | None = None  # the highest class the key may ask for
    models: frozenset[str] | None = None  # None: every served model
    limits: KeyLimits = field(default_factory=KeyLimits)
    tenant_limits: KeyLimits = field(default_factory=KeyLimits)  # shared by the tenant's keys

    def may_use(self, model: str) -> bool:
        return self.models is None or model in self.models


def key_digest(key: str) -> str:
    """The SHA-256 of a key, as stored in the key set. API keys are 256-bit random strings, so
    a fast hash is as safe as a slow one and keeps the check to a microsecond."""
    return hashlib.sha256(key.encode()).hexdigest()


def bearer_token(authorization: str | None) -> str | None:
    """The token of an `Authorization: Bearer <token>` header (the scheme in any case, as
    RFC 9110 has it); None without one, or for another scheme or a bare value, which OpenAI's
    API refuses too."""
    if not authorization:
        return None
    scheme, _, rest = authorization.partition(" ")
    if scheme.lower() != "bearer":
        return None
    return rest.strip() or None


def credential(authorization: str | None) -> str | None:
    """Whatever an `Authorization` header carries: the bearer token, or the whole value when
    it names another scheme or none (so distinct credentials stay distinct)."""
    if not authorization:
        return None
    scheme, _, rest = authorization.partition(" ")
    token = rest if scheme.lower() == "bearer" else authorization
    return token.strip() or None


@functools.lru_cache(maxsize=4096)
def unverified_caller(authorization: str | None) -> Caller:
    """Access control off: a tenant per distinct credential, no limits (remembered for the
    most recent credentials: the same few callers come back on every request)."""
    token = credential(authorization)
    if token is None:
        return Caller(ANONYMOUS_TENANT)
    return Caller(key_digest(token)[:32])
