"""Per-request cache directives from the `Cache-Control` request header."""

from __future__ import annotations

from dataclasses import dataclass

from core.digits import ascii_digits


@dataclass(frozen=True, slots=True)
class CacheControl:
    """`no-cache`: do not read, do write. `no-store`: do not write. `max-age=N`: accept only
    entries younger than N seconds."""

    no_cache: bool = False
    no_store: bool = False
    max_age: int | None = None

    @classmethod
    def parse(cls, header: str | None) -> CacheControl:
        if not header:
            return _DEFAULT
        no_cache = no_store = False
        max_age: int | None = None
        for directive in header.split(","):
            name, _, value = directive.strip().lower().partition("=")
            if name == "no-cache":
                no_cache = True
            elif name == "no-store":
                no_store = True
            elif name == "max-age":
                value = value.strip().strip('"')
                if ascii_digits(value):
                    max_age = int(value)
        return cls(no_cache, no_store, max_age)


_DEFAULT = CacheControl()
