"""Token-id prompts and inputs that are not valid: a 400 naming the input and saying why."""

from __future__ import annotations

import orjson
import pytest

from core.errors import InvalidRequest
from core.protocol import CompletionRequest, EmbeddingRequest
from core.request_parsing import parse_request
from core.token_lists import token_list_error


@pytest.mark.parametrize(
    ("value", "param", "says"),
    [
        ([-1], "input", "holds -1: token ids must be non-negative integers"),
        ([1.5], "input", "holds 1.5: token ids must be non-negative integers"),
        ([5, True], "input", "holds True"),
        ([2**32], "input", "holds 4294967296"),
        ([[1, 2], [3, -4]], "input[1]", "holds -4"),
        ([[1], [2.5]], "input[1]", "holds 2.5"),
        (["a", 1], "input", "mixes texts, token ids and lists"),
        ([[1], "a"], "input", "mixes texts, token ids and lists"),
    ],
)
def test_a_bad_token_list_says_which_input_and_why(value: object, param: str, says: str) -> None:
    """Each bad token-id input names itself (`input[i]` in a list of them) and the rule."""
    error = token_list_error(value, "input")
    assert error is not None
    assert error.param == param and says in error.message


@pytest.mark.parametrize("value", ["text", ["a", "b"], [1, 2], [[1], [2, 3]], 5, [], None])
def test_no_token_fault_is_left_to_the_usual_message(value: object) -> None:
    """Values with no token-id fault (valid ones, or not lists at all) get no verdict here."""
    assert token_list_error(value, "input") is None


@pytest.mark.parametrize(
    ("model", "field", "value", "param"),
    [
        (EmbeddingRequest, "input", [-1], "input"),
        (EmbeddingRequest, "input", [[7], [1.5]], "input[1]"),
        (CompletionRequest, "prompt", [5, -1], "prompt"),
        (CompletionRequest, "prompt", [[5], [0.5]], "prompt[1]"),
    ],
)
def test_requests_name_the_bad_input(
    model: type[EmbeddingRequest | CompletionRequest], field: str, value: object, param: str
) -> None:
    """Embeddings and completions say what is wrong, not "Input should be a valid string"."""
    with pytest.raises(InvalidRequest) as info:
        parse_request(orjson.dumps({"model": "m", field: value}), model)
    assert info.value.param == param
    assert "token ids must be non-negative integers" in info.value.message
