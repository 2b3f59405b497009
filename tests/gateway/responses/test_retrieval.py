"""`GET /v1/responses/{id}`'s query: what the gateway cannot serve (a stream, a cursor into
one, an include it has no value for) is a 400 naming the parameter; the rest is served."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.datastructures import QueryParams

from core.errors import InvalidRequest
from gateway.responses.retrieval import check_kept, check_query

LOGPROBS = "message.output_text.logprobs"


def _response(logprobs: list[Any]) -> dict[str, Any]:
    part = {"type": "output_text", "text": "Hi.", "annotations": [], "logprobs": logprobs}
    return {"output": [{"type": "message", "content": [part]}]}


@pytest.mark.parametrize(
    ("query", "param"),
    [
        ("stream=true", "stream"),
        ("stream=True", "stream"),
        ("stream=yes", "stream"),
        ("starting_after=3", "starting_after"),
        ("include_obfuscation=maybe", "include_obfuscation"),
        ("include=bogus", "include"),
        (f"include[]={LOGPROBS}&include[]=bogus", "include"),
    ],
)
def test_what_is_not_served_is_a_400_naming_it(query: str, param: str) -> None:
    """A stream (only a background response, which the gateway never has, replays one), a
    cursor into it, a flag that is no boolean or an include outside the create endpoint's."""
    with pytest.raises(InvalidRequest) as refused:
        check_query(QueryParams(query))
    assert refused.value.param == param and refused.value.status == 400


def test_what_is_served_passes() -> None:
    """No query, stream=false, include_obfuscation and the includable value, sent as the SDK
    sends arrays (`include[]`) or repeated plain."""
    assert check_query(QueryParams("")) == []
    assert check_query(QueryParams("stream=false&include_obfuscation=true")) == []
    assert check_query(QueryParams(f"include%5B%5D={LOGPROBS}")) == [LOGPROBS]
    assert check_query(QueryParams(f"include={LOGPROBS}")) == [LOGPROBS]


def test_included_logprobs_must_have_been_kept() -> None:
    """A response created with logprobs serves them; one created without is a 400 naming
    include, not an answer silently without them."""
    kept = [{"token": "Hi", "logprob": -0.1, "bytes": [72, 105], "top_logprobs": []}]
    check_kept(_response(kept), [LOGPROBS])
    check_kept(_response([]), [])
    with pytest.raises(InvalidRequest) as refused:
        check_kept(_response([]), [LOGPROBS])
    assert refused.value.param == "include"
