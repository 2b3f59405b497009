"""`GET /v1/responses/{id}`'s query, as OpenAI's retrieval takes it: `stream` (with
`starting_after` and `include_obfuscation`) replays a background response's events, which
this gateway, with no background mode, never has: `stream=true` is OpenAI's own 400 for a
response created without `background`. `include` names what the create endpoint may include;
only what the stored response kept can be served."""

from __future__ import annotations

from typing import Any

from starlette.datastructures import QueryParams

from core.errors import InvalidRequest, UnsupportedParameter
from core.responses_protocol import INCLUDABLE, OUTPUT_TEXT_LOGPROBS


def check_query(query: QueryParams) -> list[str]:
    """The `include` values asked for, once the query is known to ask nothing this gateway
    cannot serve; 400s name the parameter."""
    if _flag(query, "stream"):
        raise InvalidRequest(
            "This response cannot be streamed because it was not created with "
            "background=true (this gateway has no background mode).",
            param="stream",
        )
    if "starting_after" in query:
        raise InvalidRequest(
            "starting_after applies only to a streamed retrieval (stream=true).",
            param="starting_after",
        )
    _flag(query, "include_obfuscation")  # a stream's option: valid, and nothing to obfuscate
    include = query_list(query, "include")
    for value in include:
        if value not in INCLUDABLE:
            raise UnsupportedParameter(
                f"include {value!r} is not supported (only {OUTPUT_TEXT_LOGPROBS!r}).",
                param="include",
            )
    return include


def check_kept(response: dict[str, Any], include: list[str]) -> None:
    """400 when `include` asks for output text logprobs the response was created without (it
    kept none to show)."""
    if OUTPUT_TEXT_LOGPROBS not in include:
        return
    for item in response.get("output") or ():
        for part in item.get("content") or () if item.get("type") == "message" else ():
            if part.get("type") == "output_text" and part.get("text") and not part.get("logprobs"):
                raise InvalidRequest(
                    f"This response was created without include {[OUTPUT_TEXT_LOGPROBS]}: "
                    "its output text's logprobs were not kept.",
                    param="include",
                )


def query_list(query: QueryParams, name: str) -> list[str]:
    """Every value of an array parameter: `name=a&name=b`, or `name[]=a&name[]=b` as the
    official SDKs send arrays."""
    return [*query.getlist(name), *query.getlist(f"{name}[]")]


def _flag(query: QueryParams, name: str) -> bool:
    raw = query.get(name)
    if raw is None or raw.lower() == "false":
        return False
    if raw.lower() == "true":
        return True
    raise InvalidRequest(f"{name} must be true or false, got {raw!r}.", param=name)
