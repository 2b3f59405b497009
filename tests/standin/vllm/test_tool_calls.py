"""The stand-in's tool answers: it finds the offered tools in the prompt text, calls one with
arguments fitting its parameters, answers in words when a tool's result is the last message,
and lets a marker in the last user message pick the scenario, round after round, in every
chat template it serves."""

from __future__ import annotations

import argparse
import random
from typing import Any

import orjson
import pytest

from backends.tool_calls.hermes import HermesParser
from backends.vllm_grpc.chat_template import render_chat
from backends.vllm_grpc.tokenizer_store import load_tokenizer_bundle
from standin.vllm.cli import add_arguments
from standin.vllm.config import SimConfig
from standin.vllm.sampling import SamplingSpec
from standin.vllm.served_model import model_for
from standin.vllm.tool_calls import (
    DEFAULT_SCENARIO,
    answered_by_a_tool,
    offered_tools,
    scenario,
    tool_answer,
    tool_call_text,
)

TOOL = {
    "name": "book",
    "parameters": {
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "nights": {"type": "integer"},
            "breakfast": {"type": "boolean"},
            "room": {"enum": ["single", "double"]},
        },
    },
}
SYSTEM = (
    "<|im_start|>system\n# Tools\n\nSignatures are within <tools></tools>:\n<tools>\n"
    + orjson.dumps({"type": "function", "function": TOOL}).decode()
    + "\n</tools>\n\nReturn calls within <tool_call></tool_call> tags:\n<tool_call>\n{}\n"
    "</tool_call><|im_end|>\n"
)
CALL = '\n<tool_call>\n{"name": "book", "arguments": {}}\n</tool_call>'
RESULT = "<tool_response>\nok\n</tool_response>"


def _turn(role: str, text: str) -> str:
    return f"<|im_start|>{role}\n{text}<|im_end|>\n"


def _asked(*turns: str) -> str:
    """A ChatML prompt (special tokens kept) of the tools, `turns`, and the model's turn."""
    return SYSTEM + "".join(turns) + "<|im_start|>assistant\n"


def _words(count: int) -> list[str]:
    return ["word"] * count


def test_offered_tools_are_read_from_the_prompt() -> None:
    """The JSON lines between the last <tools> tags, past the instructions' own mention."""
    assert [tool["name"] for tool in offered_tools(_asked(_turn("user", "book a room")))] == [
        "book"
    ]
    assert offered_tools(_asked(_turn("user", "no tools here"))[len(SYSTEM) :]) == []


def test_a_tool_result_as_the_last_message_means_answer_in_words() -> None:
    """A call then its result: answered; a call alone, nothing yet, or a user message after
    the result (a new round): not answered."""
    asked = _turn("user", "book it")
    called = _turn("assistant", CALL)
    assert not answered_by_a_tool(_asked(asked)) and not answered_by_a_tool(_asked(asked, called))
    assert answered_by_a_tool(_asked(asked, called, _turn("user", RESULT)))
    again = (asked, called, _turn("user", RESULT), _turn("assistant", "Done."), asked)
    assert not answered_by_a_tool(_asked(*again))


def test_the_call_parses_and_fits_the_parameters() -> None:
    """The generated text holds one call the gateway's parser reads, with typed arguments."""
    text = tool_call_text([TOOL], random.Random(7), _words)
    parser = HermesParser(["book"])
    first, rest = parser.feed(text), parser.finish()
    (call,) = first.calls + rest.calls
    arguments = orjson.loads(call.arguments)
    assert call.name == "book" and first.content.startswith("Word word word.")
    assert isinstance(arguments["city"], str) and isinstance(arguments["nights"], int)
    assert isinstance(arguments["breakfast"], bool) and arguments["room"] in ("single", "double")


def test_the_last_user_messages_marker_picks_the_scenario() -> None:
    """The last marker of the last user message (a tool's result is none) wins; earlier
    messages' markers do not count; none means the default."""
    assert scenario(_asked(_turn("user", "book it"))) == DEFAULT_SCENARIO == "text-then-call"
    assert scenario(_asked(_turn("user", "[[parallel]] then [[malformed]]"))) == "malformed"
    first, then = _turn("user", "[[single]]"), _turn("user", "[[parallel]] now two")
    assert scenario(_asked(first, _turn("assistant", "ok"), then)) == "parallel"
    assert scenario(_asked(first, _turn("assistant", CALL), _turn("user", RESULT))) == "single"
    assert scenario(_asked(first, _turn("assistant", "ok"), _turn("user", "more"))) == (
        DEFAULT_SCENARIO
    )
    assert scenario("[[single]]" + _asked(_turn("user", "book it [[nonsense]]"))) == (
        DEFAULT_SCENARIO
    )
    no_markup = SYSTEM.replace("<|im_start|>", "").replace("<|im_end|>", "")
    assert scenario(no_markup + "user\n[[single]]\n") == "single"  # a raw prompt: one message


def test_text_only_answers_in_words_and_so_does_a_prompt_without_tools() -> None:
    """[[text-only]], no tools, or a tool's result: no call (the caller writes words)."""
    rng = random.Random(1)
    assert tool_answer(_asked(_turn("user", "chat [[text-only]]")), "hermes", rng, _words) is None
    assert tool_answer(_turn("user", "hello"), "hermes", rng, _words) is None
    assert tool_answer(_asked(_turn("user", "book")), "mistral", rng, _words) is not None


WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}
ROUND_ONE: list[dict[str, Any]] = [
    {"role": "user", "content": "Weather? [[single]]"},
    {
        "role": "assistant",
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
]


@pytest.mark.parametrize(
    "config",
    [SimConfig(), SimConfig(reasoning=True), SimConfig(harmony=True)],
    ids=["chatml", "thinking", "harmony"],
)
def test_each_round_of_an_agent_loop_is_its_own(config: SimConfig) -> None:
    """Rendered by each template the stand-in serves: a tool's result gets words; after the
    answer a user message's marker gets calls again, as it would alone."""
    model = model_for(config)
    bundle = load_tokenizer_bundle(model.vocab.directory)

    def answer(messages: list[dict[str, Any]]) -> str:
        template = bundle.chat_template(tools=True)
        prompt = render_chat(template, messages, add_generation_prompt=True, tools=[WEATHER])
        ids = bundle.encode(prompt, add_special_tokens=False)
        gen = model.generate(ids, SamplingSpec(), output_tokens=12, max_context_length=4096)
        return model.vocab.tokenizer.decode(list(gen.token_ids), skip_special_tokens=False)

    def calls(text: str) -> int:
        return text.count("<|call|>") if config.harmony else text.count("<tool_call>")

    assert calls(answer(ROUND_ONE)) == 0
    again = {"role": "user", "content": "[[parallel]] now two calls"}
    alone = calls(answer([again]))
    assert alone >= 1  # Harmony's engine stops at the first call
    words = {"role": "assistant", "content": "It is sunny."}
    assert calls(answer([*ROUND_ONE, words, again])) == alone


def test_tool_format_is_a_setting_checked_against_the_formats() -> None:
    """`--tool-format` / GATEWAY_SIM_TOOL_FORMAT set it (hermes by default); others refused."""
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    assert SimConfig().tool_format == "hermes"
    flags = parser.parse_args(["--tool-format", "pythonic"])
    assert SimConfig.from_env_and_args(flags, {}).tool_format == "pythonic"
    env = {"GATEWAY_SIM_TOOL_FORMAT": "mistral"}
    assert SimConfig.from_env_and_args(None, env).tool_format == "mistral"
    with pytest.raises(ValueError, match="tool_format"):
        SimConfig(tool_format="xml")
