"""A request body as a validated model: every failure, JSON or field, is a 400 naming the
parameter (`messages[0].content`), never a pydantic error text or a 500."""

from __future__ import annotations

from typing import Any, TypeVar

import orjson
from pydantic import BaseModel, ValidationError

from core.errors import InvalidJSON, InvalidRequest, UnsupportedParameter
from core.request_model import without_nulls

RequestT = TypeVar("RequestT", bound=BaseModel)


def parse_request(raw: bytes, model: type[RequestT]) -> RequestT:
    """Parse and validate a JSON body, mapping every failure to a 400 naming the parameter."""
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise InvalidJSON(f"The request body {not_json(raw, exc)}") from exc
    if not isinstance(data, dict):
        raise InvalidRequest("The request body must be a JSON object.")
    return validate_request(data, model)


def not_json(raw: str | bytes, error: orjson.JSONDecodeError) -> str:
    """Why `raw` failed to parse, after its name ("is not valid JSON: ..."); bytes that are no
    UTF-8 said as such (orjson's own text speaks of surrogates, at the wrong column)."""
    if isinstance(raw, bytes):
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as bad:
            return f"is not valid UTF-8 (byte {bad.start}); send JSON in UTF-8."
    return f"is not valid JSON: {error}"


def validate_request(data: dict[str, Any], model: type[RequestT]) -> RequestT:
    """Validate a decoded body, mapping every failure to a 400 naming the parameter."""
    try:
        return model.model_validate(without_nulls(data, model))
    except ValidationError as exc:
        raise _to_invalid_request(exc) from exc


def _to_invalid_request(exc: ValidationError) -> InvalidRequest:
    error = exc.errors(include_url=False)[0]
    param = _param_path(error["loc"])
    cause = error.get("ctx", {}).get("error")
    if isinstance(cause, InvalidRequest):
        return cause
    if error["type"] == "extra_forbidden":
        return UnsupportedParameter(f"Unrecognized request argument: {param}.", param=param)
    if error["type"] == "missing":
        return InvalidRequest(f"Missing required parameter: {param}.", param=param)
    message = str(error["msg"]).removeprefix("Value error, ")
    return InvalidRequest(f"Invalid value for {param}: {message}.", param=param or None)


def _param_path(loc: tuple[int | str, ...]) -> str:
    """`('messages', 0, 'content')` -> `messages[0].content`, skipping union branch tags."""
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        elif part in _UNION_TAGS or "[" in part:
            continue
        else:
            path += f".{part}" if path else part
    return path


_UNION_TAGS = {
    "str",
    "list[str]",
    "list[int]",
    "list[list[int]]",
    "dict[str,any]",
    "function-after",
}
