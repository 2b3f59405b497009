"""The base of every request model: unknown fields refused, values frozen, types checked as
OpenAI checks them, and null read as the field's default."""

from __future__ import annotations

import functools
from typing import Any

from pydantic import BaseModel, ConfigDict, model_validator


class RequestModel(BaseModel):
    """`"n": "2"` or `"stream": 1` is a 400 (an integer where a float belongs is still fine),
    and so is a field this model does not list."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    @model_validator(mode="before")
    @classmethod
    def _null_is_default(cls, data: Any) -> Any:
        """OpenAI's clients send null for an optional field left unset (`n=None`): it means
        the field's default, also where that default is not null."""
        if not isinstance(data, dict) or None not in data.values():
            return data
        defaulted = _defaulted_fields(cls)
        return {k: v for k, v in data.items() if v is not None or k not in defaulted}


@functools.cache
def _defaulted_fields(model: type[BaseModel]) -> frozenset[str]:
    """The fields of `model` whose default is not None."""
    return frozenset(
        name
        for name, field in model.model_fields.items()
        if not field.is_required() and field.default is not None
    )
