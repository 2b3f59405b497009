"""A request's `metadata` (chat and the Responses API alike), checked as OpenAI checks it: at
most 16 pairs, keys of up to 64 characters, string values of up to 512."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator

from core.errors import StringTooLong, TooManyProperties

MAX_PAIRS = 16
MAX_KEY_LENGTH = 64
MAX_VALUE_LENGTH = 512


def check_metadata(metadata: dict[str, str]) -> dict[str, str]:
    """`metadata` as it is, or a 400 naming it (or the key whose value is too long)."""
    if len(metadata) > MAX_PAIRS:
        raise TooManyProperties("metadata", len(metadata), MAX_PAIRS)
    for key, value in metadata.items():
        if len(key) > MAX_KEY_LENGTH:
            raise StringTooLong("metadata", len(key), MAX_KEY_LENGTH, what="a key")
        if len(value) > MAX_VALUE_LENGTH:
            raise StringTooLong(f"metadata.{key}", len(value), MAX_VALUE_LENGTH)
    return metadata


Metadata = Annotated[dict[str, str], AfterValidator(check_metadata)]
