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
    send null for an optional field left unset (`n=None`), also where the default is not null,
    and clients that forward every keyword send null for fields this gateway does not serve
    (`"audio": null` asks for nothing). A dict scan in C when the body holds no null, the
    usual case."""
    if None not in data.values():
        return data
    kept = _nullable_fields(model)
    return {k: v for k, v in data.items() if v is not None or k in kept}


@functools.cache
def _nullable_fields(model: type[BaseModel]) -> frozenset[str]:
    """The fields of `model` that a null is a value of: required ones (a null there is the
    client's error to hear about) and those whose default is None."""
    return frozenset(
        name
        for name, field in model.model_fields.items()
        if field.is_required() or field.default is None
    )
