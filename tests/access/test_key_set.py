"""The key set's JSON: hashes only, every field validated, errors that name entry and field."""

from __future__ import annotations

import orjson
import pytest

from access.caller import key_digest
from access.key_set import KeySetError, key_set_entry, new_key, parse_key_set

DIGEST = key_digest("sk-gw-test")


def test_entry_with_every_field() -> None:
    """A full entry becomes a caller with its tenant, class, models, limits and short id."""
    text = orjson.dumps(
        {
            "keys": [
                {
                    "sha256": DIGEST,
                    "tenant": "acme",
                    "name": "acme-prod",
                    "priority": "batch",
                    "models": ["llama"],
                    "requests_per_minute": 60,
                    "tokens_per_minute": 1000,
                    "tokens_per_day": 50000,
                    "max_tokens": 512,
                }
            ]
        }
    )
    caller = parse_key_set(text, "test")[DIGEST]
    assert (caller.tenant, caller.name, caller.priority) == ("acme", "acme-prod", "batch")
    assert caller.key_id == DIGEST[:12] and caller.may_use("llama")
    assert not caller.may_use("other")
    assert caller.limits.requests_per_minute == 60 and caller.limits.max_tokens == 512


def test_minimal_entry_allows_every_model_without_limits() -> None:
    """Only sha256 and tenant are required; a bare list is accepted too."""
    caller = parse_key_set(orjson.dumps([{"sha256": DIGEST, "tenant": "t"}]), "test")[DIGEST]
    assert caller.models is None and caller.may_use("anything")
    assert caller.priority == "interactive" and caller.limits.tokens_per_minute is None


@pytest.mark.parametrize(
    ("entry", "names"),
    [
        ({"sha256": "abc", "tenant": "t"}, "sha256"),
        ({"sha256": DIGEST}, "tenant"),
        ({"sha256": DIGEST, "tenant": "bad tenant"}, "tenant"),
        ({"sha256": DIGEST, "tenant": "t", "priority": "urgent"}, "priority"),
        ({"sha256": DIGEST, "tenant": "t", "models": "llama"}, "models"),
        ({"sha256": DIGEST, "tenant": "t", "models": []}, f"key {DIGEST[:12]}.*models is empty"),
        ({"sha256": DIGEST, "tenant": "t", "tokens_per_minute": 0}, "tokens_per_minute"),
        ({"sha256": DIGEST, "tenant": "t", "max_tokens": True}, "max_tokens"),
        ({"sha256": DIGEST, "tenant": "t", "rpm": 5}, "unknown fields: rpm"),
    ],
)
def test_invalid_entries_name_the_field(entry: dict[str, object], names: str) -> None:
    """Each invalid entry is refused with a message naming the entry and the field."""
    with pytest.raises(KeySetError, match=names) as info:
        parse_key_set(orjson.dumps({"keys": [entry]}), "keys.json")
    assert "keys.json key #1" in str(info.value)


def test_broken_documents_are_refused() -> None:
    """Not JSON, not a list of keys, or a repeated hash: refused."""
    for text in (b"{", b'{"keys": 3}', orjson.dumps([{"sha256": DIGEST, "tenant": "t"}] * 2)):
        with pytest.raises(KeySetError):
            parse_key_set(text, "test")


def test_a_key_file_that_is_no_utf_8_is_said_to_be() -> None:
    """A key file in latin-1 is refused as no UTF-8, at its byte, naming the file."""
    with pytest.raises(KeySetError, match=r"^keys.json is not valid UTF-8 \(byte 13\)"):
        parse_key_set(b'{"keys":["caf\xe9"]}', "keys.json")


def test_new_key_and_its_entry_round_trip() -> None:
    """A new key is random; its printed entry parses back to a caller for that key."""
    key = new_key()
    assert key.startswith("sk-gw-") and len(key) > 40 and key != new_key()
    entry = key_set_entry(key_digest(key), "acme", models=["llama"], max_tokens=None)
    caller = parse_key_set(f"[{entry}]", "test")[key_digest(key)]
    assert caller.tenant == "acme" and caller.models == frozenset({"llama"})
    assert key not in entry


def test_tenant_limits_apply_to_every_key_of_the_tenant() -> None:
    """A "tenants" section gives each key of that tenant the tenant's shared limits."""
    other = key_digest("sk-gw-other")
    text = orjson.dumps(
        {
            "keys": [
                {"sha256": DIGEST, "tenant": "acme"},
                {"sha256": other, "tenant": "globex"},
            ],
            "tenants": [{"tenant": "acme", "requests_per_minute": 100}],
        }
    )
    keys = parse_key_set(text, "test")
    assert keys[DIGEST].tenant_limits.requests_per_minute == 100
    assert keys[other].tenant_limits.requests_per_minute is None


@pytest.mark.parametrize(
    ("document", "names"),
    [
        ({"keys": [], "tenants": {}}, "tenants"),
        ({"keys": [], "tenants": [{"tenant": "a", "max_tokens": 5}]}, "unknown fields"),
        ({"keys": [], "tenants": [{"tenant": "a"}, {"tenant": "a"}]}, "repeats tenant"),
        ({"keys": [], "tenants": [{"tenant": "a", "tokens_per_day": -1}]}, "tokens_per_day"),
        ({"keys": [], "groups": []}, "unknown sections"),
    ],
)
def test_invalid_tenant_sections_are_refused(document: dict[str, object], names: str) -> None:
    """A broken tenants section is refused with a message naming what is wrong."""
    with pytest.raises(KeySetError, match=names):
        parse_key_set(orjson.dumps(document), "keys.json")
