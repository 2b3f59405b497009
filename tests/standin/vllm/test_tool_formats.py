"""Round trips: what the stand-in writes in each tool-call format, the gateway's parser of
that format reads back, in every scenario, whole and token by token through the stand-in's
own tokenizer."""

from __future__ import annotations

import random
from typing import Any

import orjson
import pytest

from backends.tool_calls.choice import PARSERS
from backends.tool_calls.functions import Functions
from backends.tool_calls.parsed import ToolCallParser
from standin.vllm.config import SimConfig
from standin.vllm.sampling import SamplingSpec
from standin.vllm.served_model import expected_generation, load_model
from standin.vllm.tool_calls import tool_call_text
from standin.vllm.tool_formats import TOOL_FORMATS, write_broken_call, write_calls
from tests.backends.tool_calls.helpers import call_values

BOOK = {
    "name": "book",
    "parameters": {
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "nights": {"type": "integer"},
            "breakfast": {"type": "boolean"},
            "room": {"enum": ["single", "double"]},
            "budget": {"type": "number"},
            "guests": {"type": "array", "items": {"type": "string"}},
            "extras": {"type": "object"},
        },
    },
}
PING = {"name": "ping", "parameters": {"type": "object", "properties": {}}}
TOOLS = [BOOK, PING]
FUNCTIONS = Functions.from_tools([{"type": "function", "function": tool} for tool in TOOLS])
ARGS: dict[str, Any] = {
    "city": 'Köln "centre"',
    "nights": 3,
    "breakfast": False,
    "room": "double",
    "budget": 99.5,
    "guests": ["Ann", "Bo"],
    "extras": {"late": True, "note": None},
}
Result = tuple[str, list[tuple[str, Any]]]


def _parse(tool_format: str, pieces: list[str]) -> Result:
    parser: ToolCallParser = PARSERS[tool_format](FUNCTIONS)
    results = [parser.feed(piece) for piece in pieces] + [parser.finish()]
    content = "".join(r.content for r in results)
    return content, call_values(results)


def _words(rng: random.Random) -> Any:
    return lambda count: [rng.choice(["alpha", "beta", "gamma"]) for _ in range(count)]


def test_the_stand_in_knows_every_format_the_gateway_parses() -> None:
    """The two lists name the same formats."""
    assert set(TOOL_FORMATS) == set(PARSERS)


@pytest.mark.parametrize("tool_format", TOOL_FORMATS)
def test_written_calls_read_back_exactly(tool_format: str) -> None:
    """One call, two, and one after words: names and typed arguments survive."""
    one = [("book", ARGS)]
    two = [("book", ARGS), ("ping", {})]
    assert _parse(tool_format, [write_calls(tool_format, one, after_text=False)])[1] == one
    assert _parse(tool_format, [write_calls(tool_format, two, after_text=False)])[1] == two
    text = "Let me see.\n" + write_calls(tool_format, one, after_text=True)
    assert _parse(tool_format, [text]) == ("Let me see.\n", one)


@pytest.mark.parametrize("tool_format", TOOL_FORMATS)
def test_a_broken_call_reads_back_as_text(tool_format: str) -> None:
    """The malformed call stays content, as written."""
    text = write_broken_call(tool_format, "book", "city")
    assert _parse(tool_format, [text]) == (text, [])


@pytest.mark.parametrize("tool_format", TOOL_FORMATS)
@pytest.mark.parametrize("seed", range(5))
def test_every_scenario_reads_back(tool_format: str, seed: int) -> None:
    """Each scenario parses as intended, with the same arguments as Hermes for the same seed."""

    def answer(picked: str, fmt: str = tool_format) -> str:
        rng = random.Random(seed)
        return tool_call_text(TOOLS, rng, _words(rng), fmt, picked)

    reference = _parse("hermes", [answer("text-then-call", "hermes")])[1]
    content, calls = _parse(tool_format, [answer("text-then-call")])
    assert content.endswith(".\n") and " " in content and calls == reference
    assert _parse(tool_format, [answer("single")]) == ("", reference)
    content, calls = _parse(tool_format, [answer("parallel")])
    # Hermes-style calls come one per line: the line break between them stays content.
    assert content.strip() == "" and sorted(name for name, _ in calls) == ["book", "ping"]
    for picked in ("malformed", "unknown-tool"):
        text = answer(picked)
        assert _parse(tool_format, [text]) == (text, []), picked


@pytest.mark.parametrize("tool_format", TOOL_FORMATS)
@pytest.mark.parametrize("marker", ["", "[[single]]", "[[parallel]]", "[[malformed]]"])
def test_the_stand_in_answers_in_its_format_token_by_token(tool_format: str, marker: str) -> None:
    """Generated and tokenized by the stand-in, read alike whole or token by token."""
    prompt = (
        "system\n<tools>\n"
        + "\n".join(orjson.dumps({"type": "function", "function": t}).decode() for t in TOOLS)
        + f"\n</tools>\nuser\nplan my trip {marker}\nassistant\n"
    )
    config = SimConfig(tool_format=tool_format)
    gen = expected_generation(prompt, SamplingSpec(), config=config)
    whole = _parse(tool_format, [gen.text])
    vocab = load_model().vocab
    ids = [i for i in gen.token_ids if i != vocab.eos_id]
    pieces = [vocab.decode(ids[: k + 1])[len(vocab.decode(ids[:k])) :] for k in range(len(ids))]
    assert "".join(pieces) == gen.text
    assert _parse(tool_format, pieces) == whole
    content, calls = whole
    expected_calls = {"": 1, "[[single]]": 1, "[[parallel]]": 2, "[[malformed]]": 0}[marker]
    assert len(calls) == expected_calls
    assert (content == gen.text) == (marker == "[[malformed]]")
