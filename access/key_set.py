"""The key set: API keys by the SHA-256 of the key, read from JSON that holds only hashes.

```json
{"keys": [
  {"sha256": "<64 hex digits>", "tenant": "acme", "name": "acme-prod",
   "priority": "interactive", "models": ["llama"],
   "requests_per_minute": 600, "tokens_per_minute": 200000, "tokens_per_day": 5000000,
   "max_tokens": 4096}
]}
```

Only `sha256` and `tenant` are required. A missing `models` allows every served model; a
missing limit is no limit; `priority` is the highest class the key may ask for (default
`interactive`). Unknown fields are errors, so a typo never silently lifts a limit.

Limits shared by every key of a tenant go in an optional `"tenants"` list beside `"keys"`:
`{"tenant": "acme", "requests_per_minute": ..., "tokens_per_minute": ..., "tokens_per_day": ...}`;
a request is then charged to its key's limits and to its tenant's.
"""

from __future__ import annotations

import dataclasses
import re
import secrets
from collections.abc import Mapping
from typing import Any, cast

import orjson

from access.caller import Caller, KeyLimits
from budgets.priority import PRIORITIES, Priority
from core.request_parsing import not_json

KeySet = Mapping[str, Caller]  # key digest -> caller

_HEX64 = re.compile(r"[0-9a-f]{64}")
_TENANT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_TENANT_LIMITS = ("requests_per_minute", "tokens_per_minute", "tokens_per_day")
_LIMITS = (*_TENANT_LIMITS, "max_tokens")
_FIELDS = frozenset({"sha256", "tenant", "name", "priority", "models", *_LIMITS})


class KeySetError(ValueError):
    """The key set is invalid; the message says which entry and field."""


def parse_key_set(text: str | bytes, source: str) -> dict[str, Caller]:
    """Every key in `text` by its digest; `source` names where it came from in errors."""
    try:
        document = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise KeySetError(f"{source} {not_json(text, exc)}") from None
    entries = document.get("keys") if isinstance(document, dict) else document
    if not isinstance(entries, list):
        raise KeySetError(f'{source} must be {{"keys": [...]}} or a list of keys')
    tenants = _parse_tenants(
        document.get("tenants", []) if isinstance(document, dict) else [], source
    )
    if isinstance(document, dict) and set(document) - {"keys", "tenants"}:
        unknown = ", ".join(sorted(set(document) - {"keys", "tenants"}))
        raise KeySetError(f"{source} has unknown sections: {unknown}")
    keys: dict[str, Caller] = {}
    for position, entry in enumerate(entries):
        where = f"{source} key #{position + 1}"
        digest, caller = _parse_entry(entry, where)
        if digest in keys:
            raise KeySetError(f"{where} repeats a sha256 already listed")
        if caller.tenant in tenants:
            caller = dataclasses.replace(caller, tenant_limits=tenants[caller.tenant])
        keys[digest] = caller
    return keys


def check_no_repeats(file_keys: KeySet, inline_keys: KeySet, source: str) -> None:
    """KeySetError naming both variables if a key of the file (`source`) is also inline: the
    two entries may disagree on its limits and models. Keys are named by id and name only."""
    repeated = sorted(file_keys.keys() & inline_keys.keys())
    if repeated:
        labels = ", ".join(_label(file_keys[digest]) for digest in repeated)
        raise KeySetError(
            f"{source} repeats {len(repeated)} key(s) of GATEWAY_API_KEYS ({labels}); give "
            "each key in GATEWAY_API_KEYS_FILE or in GATEWAY_API_KEYS, not both"
        )


def _label(caller: Caller) -> str:
    """A key as logs may show it: its id (the SHA-256's first 12 hex digits) and its name."""
    return f"key {caller.key_id}" + (f" {caller.name!r}" if caller.name else "")


def _parse_tenants(entries: Any, source: str) -> dict[str, KeyLimits]:
    if not isinstance(entries, list):
        raise KeySetError(f'{source}: "tenants" must be a list')
    tenants: dict[str, KeyLimits] = {}
    for position, entry in enumerate(entries):
        where = f"{source} tenant #{position + 1}"
        if not isinstance(entry, dict):
            raise KeySetError(f"{where} must be an object")
        unknown = set(entry) - {"tenant", *_TENANT_LIMITS}
        if unknown:
            raise KeySetError(f"{where} has unknown fields: {', '.join(sorted(unknown))}")
        tenant = _tenant(entry.get("tenant"), where)
        if tenant in tenants:
            raise KeySetError(f"{where} repeats tenant {tenant!r}")
        tenants[tenant] = KeyLimits(**_limit_values(entry, _TENANT_LIMITS, where))
    return tenants


def _tenant(value: Any, where: str) -> str:
    if not isinstance(value, str) or not _TENANT.fullmatch(value):
        raise KeySetError(
            f"{where}: tenant must be 1-64 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    return value


def _limit_values(entry: dict[str, Any], names: tuple[str, ...], where: str) -> dict[str, Any]:
    values = {}
    for name in names:
        value = entry.get(name)
        invalid = not isinstance(value, int) or isinstance(value, bool) or value < 1
        if value is not None and invalid:
            raise KeySetError(f"{where}: {name} must be a positive integer")
        values[name] = value
    return values


def _parse_entry(entry: Any, where: str) -> tuple[str, Caller]:
    if not isinstance(entry, dict):
        raise KeySetError(f"{where} must be an object")
    unknown = set(entry) - _FIELDS
    if unknown:
        raise KeySetError(f"{where} has unknown fields: {', '.join(sorted(unknown))}")
    digest = entry.get("sha256")
    if not isinstance(digest, str) or not _HEX64.fullmatch(digest.lower()):
        raise KeySetError(f"{where}: sha256 must be 64 hex digits (the key's SHA-256)")
    tenant = _tenant(entry.get("tenant"), where)
    name = entry.get("name", "")
    if not isinstance(name, str):
        raise KeySetError(f"{where}: name must be a string")
    priority = entry.get("priority", "interactive")
    if priority not in PRIORITIES:
        raise KeySetError(f"{where}: priority must be one of {', '.join(PRIORITIES)}")
    models = entry.get("models")
    if models is not None and (
        not isinstance(models, list) or not all(isinstance(m, str) and m for m in models)
    ):
        raise KeySetError(f"{where}: models must be a list of model names")
    if models == []:
        raise KeySetError(
            f"{where} (key {digest.lower()[:12]}): models is empty, which would let the key use "
            "no model; leave it out for every model"
        )
    limits = _limit_values(entry, _LIMITS, where)
    digest = digest.lower()
    caller = Caller(
        tenant=tenant,
        key_id=digest[:12],
        name=name,
        priority=cast(Priority, priority),
        models=None if models is None else frozenset(models),
        limits=KeyLimits(**limits),
    )
    return digest, caller


KEY_PREFIX = "sk-gw-"


def new_key() -> str:
    """A fresh API key: 256 random bits, URL-safe."""
    return KEY_PREFIX + secrets.token_urlsafe(32)


def key_set_entry(digest: str, tenant: str, **fields: Any) -> str:
    """The JSON entry of a key for the key set (fields left out when None; a zero or an empty
    list is kept, for the key set's checks to refuse rather than read as no limit)."""
    entry = {"sha256": digest, "tenant": tenant}
    entry.update({name: value for name, value in fields.items() if value is not None})
    return orjson.dumps(entry).decode()
