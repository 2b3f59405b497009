"""`GET /v1/responses/{id}/input_items`: a stored response's input as OpenAI lists it.

The input is everything the response answered: the conversation it continued (by
`previous_response_id`) and its own input items, in the order they were sent, as the store
keeps them before the response's output. Each item is shown as the SDK types it (a message's
text as parts, a status, an id): the id the client gave the item, else the one the response
that took it as input gave it when it was stored (derived from that response's id and the
item's position), so the same item has the same id on every call, in every response of the
chain, and an `after` cursor finds it again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.digits import ascii_digits
from core.errors import InvalidRequest, UnsupportedParameter
from gateway.responses.objects import output_text

MAX_LIMIT = 100
DEFAULT_LIMIT = 20
_ID_PREFIXES = {
    "message": "msg_",
    "function_call": "fc_",
    "function_call_output": "fco_",
    "reasoning": "rs_",
}


def input_item_list(
    stored: dict[str, Any], response_id: str, query: Mapping[str, str]
) -> dict[str, Any]:
    """One page of the stored response's input items (`limit`, `order`, `after`), as
    OpenAI's list object."""
    limit = _limit(query.get("limit"))
    order = query.get("order", "desc")
    if order not in ("asc", "desc"):
        raise InvalidRequest(f"order must be 'asc' or 'desc', got {order!r}.", param="order")
    if query.get("include") or query.get("include[]"):  # the official SDKs send `include[]`
        raise UnsupportedParameter(
            "include is not supported: these items hold nothing more to include.",
            param="include",
        )
    items = input_items_of(stored, response_id)
    if order == "desc":
        items.reverse()
    after = query.get("after")
    if after is not None:
        position = next((i for i, item in enumerate(items) if item["id"] == after), None)
        if position is None:
            raise InvalidRequest(
                f"No input item {after!r} in response {response_id!r}.", param="after"
            )
        items = items[position + 1 :]
    page = items[:limit]
    return {
        "object": "list",
        "data": page,
        "first_id": page[0]["id"] if page else None,
        "last_id": page[-1]["id"] if page else None,
        "has_more": len(items) > limit,
    }


def with_ids(items: list[dict[str, Any]], response_id: str, start: int) -> list[dict[str, Any]]:
    """A response's own input items (at `start` in its conversation) as it stores them: each
    with an id, the client's or one of this response's, which the item keeps in every
    response that continues the conversation (as OpenAI's items keep theirs)."""
    return [
        item if _given_id(item) else {**item, "id": _derived_id(item, response_id, start + i)}
        for i, item in enumerate(items)
    ]


def input_items_of(stored: dict[str, Any], response_id: str) -> list[dict[str, Any]]:
    """Every input item of a stored response, oldest first, as listed (an item stored
    without an id, by an older gateway, gets one derived from this response)."""
    items: list[dict[str, Any]] = stored["items"]
    inputs = items[: len(items) - len(stored["response"]["output"])]
    return [
        _listed(item, _given_id(item) or _derived_id(item, response_id, position))
        for position, item in enumerate(inputs)
    ]


def _given_id(item: dict[str, Any]) -> str | None:
    given = item.get("id")
    return given if isinstance(given, str) and given else None


def _derived_id(item: dict[str, Any], response_id: str, position: int) -> str:
    prefix = _ID_PREFIXES.get(item.get("type", "message"), "")
    return f"{prefix}{response_id.removeprefix('resp_')}_in{position}"


def _limit(raw: str | None) -> int:
    if raw is None:
        return DEFAULT_LIMIT
    if not ascii_digits(raw) or not 1 <= int(raw) <= MAX_LIMIT:
        raise InvalidRequest(
            f"limit must be an integer from 1 to {MAX_LIMIT}, got {raw!r}.", param="limit"
        )
    return int(raw)


def _listed(item: dict[str, Any], item_id: str) -> dict[str, Any]:
    """An item as the SDK types it (the store keeps it as the client sent it)."""
    kind = item.get("type", "message")
    status = item.get("status") or "completed"
    if kind == "message":
        role = item.get("role")
        content = item.get("content")
        parts = [{"type": "input_text", "text": content}] if isinstance(content, str) else content
        if role == "assistant":
            return {
                "type": "message",
                "id": item_id,
                "status": status,
                "role": "assistant",
                "content": [_output_part(part) for part in parts or ()],
            }
        return {
            "type": "message",
            "id": item_id,
            "status": status,
            "role": role,
            "content": [{"type": "input_text", "text": _part_text(part)} for part in parts or ()],
        }
    if kind == "function_call":
        return {
            "type": "function_call",
            "id": item_id,
            "call_id": item.get("call_id"),
            "name": item.get("name"),
            "arguments": item.get("arguments") or "{}",
            "status": status,
        }
    if kind == "function_call_output":
        output = item.get("output")
        if isinstance(output, list):
            output = [{"type": "input_text", "text": _part_text(part)} for part in output]
        return {
            "type": "function_call_output",
            "id": item_id,
            "call_id": item.get("call_id"),
            "output": output,
            "status": status,
        }
    if kind == "reasoning":
        return {
            "type": "reasoning",
            "id": item_id,
            "summary": item.get("summary") or [],
            "content": item.get("content") or [],
            "status": status,
        }
    return {**item, "id": item_id}  # not an item this gateway accepts as input: as it was kept


def _output_part(part: Any) -> dict[str, Any]:
    if isinstance(part, dict) and part.get("type") == "refusal":
        return {"type": "refusal", "refusal": part.get("refusal", "")}
    return output_text(_part_text(part))


def _part_text(part: Any) -> str:
    if isinstance(part, str):
        return part
    text = part.get("text", part.get("refusal", "")) if isinstance(part, dict) else ""
    return text if isinstance(text, str) else ""
