"""Integers beyond 64 bits in a call's arguments come out as the model wrote them, in every
format, and JSON read for the prompt keeps them too."""

from __future__ import annotations

import orjson
import pytest

from backends.tool_calls.choice import PARSERS
from backends.tool_calls.exact_json import loads
from backends.tool_calls.forced import ForcedCallsParser
from backends.tool_calls.parsed import ToolCallParser
from tests.backends.tool_calls.helpers import TOOLS, whole_calls

BIG = "123456789012345678901234567890"
OUTPUTS = {
    "hermes": f'<tool_call>{{"name": "get_weather", "arguments": {{"days": {BIG}}}}}</tool_call>',
    "llama3_json": f'{{"name": "get_weather", "parameters": {{"days": {BIG}}}}}',
    "mistral": f'[TOOL_CALLS]get_weather[ARGS]{{"days": {BIG}}}',
    "deepseek_v3": (
        "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n"
        f'```json\n{{"days": {BIG}}}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>'
    ),
    "harmony": (
        "<|channel|>commentary to=functions.get_weather <|constrain|>json"
        f'<|message|>{{"days": {BIG}}}<|call|>'
    ),
    "qwen3_coder": (
        f"<tool_call>\n<function=get_weather>\n<parameter=days>\n{BIG}\n</parameter>\n"
        "</function>\n</tool_call>"
    ),
    "pythonic": f"[get_weather(days={BIG})]",
}


def _arguments(parser: ToolCallParser, output: str) -> str:
    calls = whole_calls([*(parser.feed(char) for char in output), parser.finish()])
    assert len(calls) == 1
    return calls[0][1]


@pytest.mark.parametrize("name", sorted(OUTPUTS))
def test_big_integers_in_arguments_are_kept(name: str) -> None:
    """The arguments hold the integer's every digit, as an integer (vLLM's json keeps it)."""
    arguments = _arguments(PARSERS[name](TOOLS), OUTPUTS[name])
    assert loads(arguments) == {"days": int(BIG)}


def test_forced_calls_keep_big_integers() -> None:
    """A forced named call's and a required call's arguments keep them too."""
    named = _arguments(ForcedCallsParser("get_weather", {"get_weather"}), f'{{"days": {BIG}}}')
    assert loads(named) == {"days": int(BIG)}
    required = ForcedCallsParser(None, {"get_weather"})
    text = f'[{{"name": "get_weather", "parameters": {{"days": -{BIG}}}}}]'
    assert loads(_arguments(required, text)) == {"days": -int(BIG)}


def test_loads_keeps_integers_at_and_past_64_bits() -> None:
    """orjson's range and beyond it, positive and negative, read exactly; floats as floats."""
    text = "[18446744073709551615, 18446744073709551616, -9223372036854775809, 1.5]"
    assert loads(text)[:4] == [2**64 - 1, 2**64, -(2**63) - 1, 1.5]


def test_loads_refuses_what_is_not_strict_json() -> None:
    """NaN, which the standard library would read, is still no JSON here."""
    with pytest.raises(orjson.JSONDecodeError):
        loads("[NaN, 12345678901234567890]")
