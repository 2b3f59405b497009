"""The base of every request model: unknown fields refused, values frozen, types checked as
OpenAI checks them; and what a null means (`without_nulls`)."""

from __future__ import annotations

import functools
from typing import Any

from pydantic import BaseModel, ConfigDict


class RequestModel(BaseModel):
    """`"n": "2"` or `"stream": 1` is a 400 (an integer where a float belongs is still fine),
    and so is a field this model does not list."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


def without_nulls(data: dict[str, Any], model: type[BaseModel]) -> dict[str, Any]:
    """A body's top-level fields less the nulls that stand for a default: OpenAI's clients
    send null for an optional field left unset (`n=None`), also where the default is not null.
    A dict scan in C when the body holds no null, the usual case."""
    if None not in data.values():
        return data
    defaulted = _defaulted_fields(model)
    return {k: v for k, v in data.items() if v is not None or k not in defaulted}


@functools.cache
def _defaulted_fields(model: type[BaseModel]) -> frozenset[str]:
    """The fields of `model` whose default is not None."""
    return frozenset(
        name
        for name, field in model.model_fields.items()
        if not field.is_required() and field.default is not None
    )
