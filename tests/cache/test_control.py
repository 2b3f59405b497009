"""Cache-Control request directives."""

from __future__ import annotations

from cache.control import CacheControl


def test_directives() -> None:
    """no-cache, no-store and max-age parse, case- and space-insensitively."""
    control = CacheControl.parse("No-Cache, no-store , max-age=30")
    assert control == CacheControl(no_cache=True, no_store=True, max_age=30)


def test_absent_and_invalid() -> None:
    """No header means defaults; a malformed max-age is ignored."""
    assert CacheControl.parse(None) == CacheControl()
    assert CacheControl.parse("max-age=soon").max_age is None
    assert CacheControl.parse("max-age=\u00b2").max_age is None  # a latin-1 byte, not 2
    assert CacheControl.parse("max-age=" + "9" * 5000).max_age is None  # past int's limit
