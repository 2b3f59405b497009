"""`metadata` checked as OpenAI checks it, in chat and in the Responses API alike: at most 16
pairs, keys up to 64 characters, values up to 512, else a 400 naming it."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from pydantic import BaseModel

from core.errors import InvalidRequest
from core.protocol import ChatCompletionRequest
from core.request_parsing import parse_request
from core.responses_protocol import ResponsesRequest

BODIES: list[tuple[type[BaseModel], dict[str, Any]]] = [
    (ChatCompletionRequest, {"model": "m", "messages": [{"role": "user", "content": "hi"}]}),
    (ResponsesRequest, {"model": "m", "input": "hi"}),
]


@pytest.mark.parametrize(("model", "body"), BODIES)
@pytest.mark.parametrize(
    ("metadata", "param", "code"),
    [
        ({f"k{i}": "v" for i in range(17)}, "metadata", "object_above_max_properties"),
        ({"k" * 65: "v"}, "metadata", "string_above_max_length"),
        ({"k": "v" * 513}, "metadata.k", "string_above_max_length"),
    ],
)
def test_metadata_over_the_limits_is_refused(
    model: type[BaseModel], body: dict[str, Any], metadata: dict[str, str], param: str, code: str
) -> None:
    """Too many pairs, a key or a value too long: a 400 with OpenAI's code, naming it."""
    with pytest.raises(InvalidRequest) as caught:
        parse_request(orjson.dumps({**body, "metadata": metadata}), model)
    assert (caught.value.param, caught.value.code) == (param, code)


@pytest.mark.parametrize(("model", "body"), BODIES)
def test_metadata_at_the_limits_is_accepted(model: type[BaseModel], body: dict[str, Any]) -> None:
    """16 pairs, a 64-character key, a 512-character value: as sent."""
    metadata = {f"k{i}": "v" for i in range(15)} | {"k" * 64: "v" * 512}
    parsed = parse_request(orjson.dumps({**body, "metadata": metadata}), model)
    assert parsed.model_dump()["metadata"] == metadata
