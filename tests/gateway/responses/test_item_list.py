"""A stored response's input items as OpenAI lists them: every item typed and with an id, the
conversation before the response's output, newest first unless asked, paged by `limit` and
`after`; bad query values are 400s naming them."""

from __future__ import annotations

from typing import Any

import pytest
from openai.types.responses import ResponseItemList

from core.errors import InvalidRequest
from gateway.responses.item_list import input_item_list, input_items_of, with_ids

RESPONSE_ID = "resp_abc"
STORED: dict[str, Any] = {
    "response": {"id": RESPONSE_ID, "output": [{"type": "message", "id": "msg_abc"}]},
    "items": [
        {"type": "message", "role": "user", "content": "Weather in Paris?"},
        {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_1", "output": "sunny"},
        {"type": "reasoning", "content": [{"type": "reasoning_text", "text": "Hm."}]},
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Sunny."}],
        },
        {
            "role": "developer",
            "content": [{"type": "input_text", "text": "Be brief."}],
            "id": "msg_client",
        },
        {
            "type": "message",
            "id": "msg_abc",
            "status": "completed",
            "role": "assistant",
            "content": [
                {"type": "output_text", "text": "Done.", "annotations": [], "logprobs": []}
            ],
        },
    ],
}


def _list(**query: str) -> dict[str, Any]:
    return input_item_list(STORED, RESPONSE_ID, query)


def test_the_input_is_the_conversation_before_the_output_newest_first() -> None:
    """Every item before the response's own output, in `desc` order by default, each with an
    id (the client's own where it gave one) and the shape of the SDK's item types."""
    page = _list()
    listed = ResponseItemList.model_validate(page, strict=True)
    assert [item.type for item in listed.data] == [
        "message",
        "message",
        "reasoning",
        "function_call_output",
        "function_call",
        "message",
    ]
    ids = [item["id"] for item in page["data"]]
    assert len(set(ids)) == len(ids) and "msg_abc" not in ids and ids[0] == "msg_client"
    assert (page["first_id"], page["last_id"], page["has_more"]) == (ids[0], ids[-1], False)
    user = page["data"][-1]
    assert user["role"] == "user"
    assert user["content"] == [{"type": "input_text", "text": "Weather in Paris?"}]
    assert page["data"][1]["content"][0]["type"] == "output_text"
    assert _list() == page  # ids are stable: a cursor names the same item next time


def test_order_limit_and_after_page_through_the_items() -> None:
    """`asc` is oldest first; pages of `limit` chained by `after` (the last id of a page) list
    every item once, the last page saying it has no more."""
    every = [item["id"] for item in _list(order="asc", limit="100")["data"]]
    assert every == [item["id"] for item in reversed(_list()["data"])]
    seen: list[str] = []
    query = {"order": "asc", "limit": "4"}
    while True:
        page = _list(**query)
        seen += [item["id"] for item in page["data"]]
        if not page["has_more"]:
            break
        query["after"] = page["last_id"]
    assert seen == every


@pytest.mark.parametrize(
    ("query", "param"),
    [
        ({"limit": "0"}, "limit"),
        ({"limit": "101"}, "limit"),
        ({"limit": "ten"}, "limit"),
        ({"limit": "\u00b2"}, "limit"),  # "²": a digit to `str.isdigit`, not to `int`
        ({"limit": "\uff11"}, "limit"),  # a fullwidth "1"
        ({"order": "sideways"}, "order"),
        ({"after": "msg_nope"}, "after"),
        ({"include": "message.input_image.image_url"}, "include"),
        ({"include[]": "message.input_image.image_url"}, "include"),
    ],
)
def test_bad_query_values_are_400s_naming_them(query: dict[str, str], param: str) -> None:
    """A limit outside 1-100, an unknown order, a cursor that is no item of this response and
    `include` (nothing of these items can be included; sent plain or as the SDK sends arrays)
    are 400s naming the parameter."""
    with pytest.raises(InvalidRequest) as refused:
        input_item_list(STORED, RESPONSE_ID, query)
    assert refused.value.param == param


def test_input_items_keep_their_ids_down_a_chain() -> None:
    """An input item stored with the id its response gave it (or the client's) is listed
    under that id by every later response of the chain, not one derived from the later one."""
    first = with_ids(
        [
            {"role": "user", "content": "Hi"},
            {"role": "user", "content": "Again", "id": "msg_mine"},
        ],
        "resp_one",
        0,
    )
    assert [item["id"] for item in first] == ["msg_one_in0", "msg_mine"]
    answer = {"type": "message", "id": "msg_one", "role": "assistant", "content": []}
    later = with_ids([{"role": "user", "content": "More"}], "resp_two", 3)
    stored = {"response": {"id": "resp_two", "output": []}, "items": [*first, answer, *later]}
    listed = [item["id"] for item in input_items_of(stored, "resp_two")]
    assert listed == ["msg_one_in0", "msg_mine", "msg_one", "msg_two_in3"]
