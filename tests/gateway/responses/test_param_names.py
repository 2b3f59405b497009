"""Chat parameters named as the Responses request that became them names them."""

from __future__ import annotations

import pytest

from core.backend_errors import BackendRejected
from core.errors import InvalidRequest
from gateway.responses.param_names import NO_ITEMS, ParamNames


@pytest.mark.parametrize(
    ("chat", "responses"),
    [
        ("messages", "input"),
        ("max_tokens", "max_output_tokens"),
        ("max_completion_tokens", "max_output_tokens"),
        ("response_format", "text.format"),
        ("response_format.json_schema.name", "text.format.name"),
        ("response_format.json_schema.schema", "text.format.schema"),
        ("response_format.type", "text.format.type"),
        ("reasoning_effort", "reasoning.effort"),
        ("verbosity", "text.verbosity"),
        ("tools[1].function.parameters", "tools[1].parameters"),
        ("tool_choice.function.name", "tool_choice.name"),
        ("tool_choice", "tool_choice"),
        ("temperature", "temperature"),
        ("model", "model"),
        (None, None),
    ],
)
def test_top_level_fields(chat: str | None, responses: str | None) -> None:
    """Every chat field a Responses field becomes is named back as that field."""
    assert NO_ITEMS.of(chat) == responses


def test_a_message_is_named_by_the_item_it_came_from() -> None:
    """`messages[i]` is the item the message came from, its fields the item's."""
    names = ParamNames(
        (
            ("instructions", "instructions"),
            ("previous_response_id[0]", "message"),
            ("input[0]", "function_call"),
            ("input[2]", "function_call_output"),
        )
    )
    assert names.of("messages[0].content") == "instructions"
    assert names.of("messages[1].content[0]") == "previous_response_id[0].content[0]"
    assert names.of("messages[2].tool_calls") == "input[0]"
    assert names.of("messages[3].tool_call_id") == "input[2].call_id"
    assert names.of("messages[3].content") == "input[2].output"
    assert names.of("messages[9].content") == "input"


def test_rename_rewrites_the_message_too() -> None:
    """The error's message names the Responses field as its param does."""
    error = InvalidRequest(
        "response_format cannot be combined with a forced tool_choice.", param="response_format"
    )
    renamed = NO_ITEMS.renamed(error)
    assert renamed.param == "text.format"
    assert renamed.message == "text.format cannot be combined with a forced tool_choice."
    assert type(renamed) is InvalidRequest and renamed.to_dict()["error"]["param"] == "text.format"


def test_the_error_renamed_is_a_copy() -> None:
    """One error object may reach several callers (a coalesced backend call): the one a
    chat caller gets keeps its chat names."""
    shared = BackendRejected("max_tokens is too large for this model.", param="max_tokens")
    renamed = NO_ITEMS.renamed(shared)
    assert renamed.param == "max_output_tokens" and renamed.status == shared.status
    assert (shared.param, shared.message) == (
        "max_tokens",
        "max_tokens is too large for this model.",
    )
    assert NO_ITEMS.renamed(InvalidRequest("bad", param="model")).param == "model"
