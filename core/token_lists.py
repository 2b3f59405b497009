"""What is wrong with a completion's `prompt` or an embeddings `input` that holds token ids
but is not valid: which input, and why, rather than the first union branch's complaint
("Input should be a valid string")."""

from __future__ import annotations

from typing import Any

from core.errors import InvalidRequest

TOKEN_ID_LIMIT = 2**32  # ids travel to vLLM as protobuf uint32


def token_list_error(value: Any, param: str) -> InvalidRequest | None:
    """The 400 for a `value` of `param` that is a list but no valid text, list of texts,
    list of token ids or list of token-id lists; None when its fault is elsewhere."""
    if not isinstance(value, list) or not value or all(isinstance(v, str) for v in value):
        return None
    if all(isinstance(v, list) for v in value):
        for i, ids in enumerate(value):
            if (error := _ids_error(ids, f"{param}[{i}]")) is not None:
                return error
        return None
    if any(isinstance(v, str | list) for v in value):
        return InvalidRequest(
            f"{param} mixes texts, token ids and lists: it must be a text, a list of texts, a "
            "list of token ids or a list of token-id lists.",
            param=param,
        )
    return _ids_error(value, param)


def _ids_error(ids: list[Any], param: str) -> InvalidRequest | None:
    for token in ids:
        if type(token) is not int or not 0 <= token < TOKEN_ID_LIMIT:
            return InvalidRequest(
                f"{param} holds {token!r}: token ids must be non-negative integers (below "
                f"{TOKEN_ID_LIMIT}).",
                param=param,
            )
    return None
