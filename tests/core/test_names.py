"""Names a client gives (functions, structured output formats): OpenAI's pattern and length,
refused in OpenAI's words and codes, naming the field."""

from __future__ import annotations

import pytest

from core.errors import InvalidRequest, StringTooLong
from core.names import check_name


@pytest.mark.parametrize("name", ["a", "get_weather", "A-z_9" + "x" * 59])
def test_letters_digits_underscores_and_dashes_pass(name: str) -> None:
    """One to 64 of them pass."""
    check_name(name, "tools[0].function.name")


@pytest.mark.parametrize("name", ["a b/c", "", "naïve", "f.g", "x\n"])
def test_another_character_is_openais_pattern_error(name: str) -> None:
    """A space, a slash, a dot, a non-ASCII letter, a newline or no character at all is
    OpenAI's `invalid_value`, its words naming the field and the pattern."""
    with pytest.raises(InvalidRequest) as refused:
        check_name(name, "response_format.json_schema.name")
    assert refused.value.param == "response_format.json_schema.name"
    assert refused.value.code == "invalid_value"
    assert refused.value.message == (
        "Invalid 'response_format.json_schema.name': string does not match pattern. Expected a "
        "string that matches the pattern '^[a-zA-Z0-9_-]+$'."
    )


def test_a_longer_name_is_openais_length_error() -> None:
    """65 characters is `string_above_max_length`, saying the limit and the length."""
    with pytest.raises(StringTooLong) as refused:
        check_name("f" * 65, "text.format.name")
    assert refused.value.param == "text.format.name"
    assert refused.value.code == "string_above_max_length"
    assert "maximum length 64, but got a string with length 65" in refused.value.message
