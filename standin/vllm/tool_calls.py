"""The stand-in's answers when a request offers tools: calls to them, in a model's format.

The tools reach the stand-in only as prompt text, the way the chat template writes them (JSON
lines between <tools> tags). The prompt is read with its special tokens, which mark its turns
(ChatML's `<|im_start|>`, Harmony's `<|start|>`). When the conversation's last message is a
tool's result (a `<tool_response>` user turn, a Harmony message from `functions.NAME`), the
stand-in answers in words instead, so an agent loop that calls a tool and then reads its
result ends; a later user message starts a new round.

The format is `SimConfig.tool_format` (`--tool-format`, `GATEWAY_SIM_TOOL_FORMAT`; default
hermes; see `tool_formats.TOOL_FORMATS`). The stand-in's chat template is Qwen2.5's whatever
the format (it offers tools as <tools> lines and writes past calls back as <tool_call> JSON),
so a gateway reads the template as Hermes: in front of a stand-in answering in another format
it needs `GATEWAY_TOOL_PARSERS=sim=FORMAT`.

A test picks the answer with a marker in the last user message (its last marker wins; earlier
messages' markers do not count, so each round of an agent loop picks its own):

    [[single]]          one call, nothing else
    [[parallel]]        two calls (to two tools when two are offered, else one tool twice)
    [[text-then-call]]  a sentence, then one call (also the answer without a marker)
    [[malformed]]       a sentence, then a call whose markup is broken (a parser keeps it as text)
    [[unknown-tool]]    a sentence, then a call to a function the prompt does not offer
    [[text-only]]       words only, no call
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from standin.vllm.tool_formats import write_broken_call, write_calls

OPEN_TOOLS, CLOSE_TOOLS = "<tools>", "</tools>"
TOOL_RESPONSE = "<tool_response>"
SCENARIOS = ("single", "parallel", "text-then-call", "malformed", "unknown-tool", "text-only")
DEFAULT_SCENARIO = "text-then-call"
_MARKER = re.compile(r"\[\[(" + "|".join(re.escape(s) for s in SCENARIOS) + r")\]\]")

Words = Callable[[int], list[str]]


def offered_tools(prompt: str) -> list[dict[str, Any]]:
    """The function definitions the prompt offers, in order ([] when it offers none)."""
    end = prompt.rfind(CLOSE_TOOLS)  # the instructions may name the tags before the list
    start = prompt.rfind(OPEN_TOOLS, 0, end)
    if start < 0 or end < 0:
        return []
    tools = []
    for line in prompt[start + len(OPEN_TOOLS) : end].splitlines():
        try:
            tool = json.loads(line)
        except json.JSONDecodeError:
            continue
        function = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            tools.append(function)
    return tools


@dataclass(frozen=True, slots=True)
class _Markup:
    """Where a template's turns begin, and what ends a turn's header and its text."""

    start: str
    header_end: str
    text_ends: tuple[str, ...]


_TEMPLATES = (
    _Markup("<|im_start|>", "\n", ("<|im_end|>",)),  # ChatML: a role line
    _Markup("<|start|>", "<|message|>", ("<|end|>", "<|call|>", "<|return|>")),  # Harmony
)


@dataclass(frozen=True, slots=True)
class Turn:
    """One message of the prompt: its role (a Harmony header's first word, such as `user` or
    `functions.get_weather`) and its text."""

    role: str
    text: str

    @property
    def tool_result(self) -> bool:
        if self.role.startswith("functions."):  # Harmony's message from a tool
            return True
        return self.role == "user" and self.text.lstrip().startswith(TOOL_RESPONSE)


def turns(prompt: str) -> list[Turn]:
    """The prompt's closed messages, in order (the turn the prompt leaves open for the model is
    not one); a prompt without turn markers is one user message."""
    markup = next((m for m in _TEMPLATES if m.start in prompt), None)
    if markup is None:
        listed = prompt.rfind(CLOSE_TOOLS)  # what comes before, and the list, is no message
        return [Turn("user", prompt if listed < 0 else prompt[listed + len(CLOSE_TOOLS) :])]
    found = []
    for piece in prompt.split(markup.start)[1:]:
        header, _, rest = piece.partition(markup.header_end)
        ends = [at for end in markup.text_ends if (at := rest.find(end)) >= 0]
        if ends:
            words = header.partition("<|")[0].split()  # Harmony's channel follows the role
            found.append(Turn(words[0] if words else "", rest[: min(ends)]))
    return found


def answered_by_a_tool(prompt: str) -> bool:
    """Whether the conversation's last message is a tool's result."""
    return _answered(turns(prompt))


def scenario(prompt: str) -> str:
    """The answer the last user message's last marker asks for (the default without one)."""
    return _picked(turns(prompt))


def _answered(messages: list[Turn]) -> bool:
    return bool(messages) and messages[-1].tool_result


def _picked(messages: list[Turn]) -> str:
    asked = next((t for t in reversed(messages) if t.role == "user" and not t.tool_result), None)
    markers = _MARKER.findall(asked.text) if asked is not None else []
    return markers[-1] if markers else DEFAULT_SCENARIO


def tool_answer(prompt: str, tool_format: str, rng: random.Random, words: Words) -> str | None:
    """What the stand-in answers to `prompt` in `tool_format`, or None to answer in words (no
    tools offered, a tool just answered, or `[[text-only]]`)."""
    tools = offered_tools(prompt)
    if not tools:
        return None
    messages = turns(prompt)
    if _answered(messages):
        return None
    picked = _picked(messages)
    if picked == "text-only":
        return None
    return tool_call_text(tools, rng, words, tool_format, picked)


def tool_call_text(
    tools: list[dict[str, Any]],
    rng: random.Random,
    words: Words,
    tool_format: str = "hermes",
    picked: str = DEFAULT_SCENARIO,
) -> str:
    """The answer for scenario `picked` (not text-only): calls to `tools` with arguments that
    fit their parameters, in `tool_format`, after a sentence unless it is calls only."""
    if picked == "parallel":
        functions = rng.sample(tools, 2) if len(tools) > 1 else tools * 2
        calls = [(f["name"], _arguments(f, rng, words)) for f in functions]
        return write_calls(tool_format, calls, after_text=False)
    function = rng.choice(tools)
    name, arguments = function["name"], _arguments(function, rng, words)
    sentence = f"{' '.join(words(3)).capitalize()}."
    if picked == "malformed":
        parameter = next(iter(_properties(function)), "value")
        return f"{sentence}\n{write_broken_call(tool_format, name, parameter)}"
    if picked == "unknown-tool":
        offered = {tool["name"] for tool in tools}
        while name in offered:
            name = f"not_{name}"
    if picked == "single":
        return write_calls(tool_format, [(name, arguments)], after_text=False)
    return f"{sentence}\n{write_calls(tool_format, [(name, arguments)], after_text=True)}"


def _properties(function: dict[str, Any]) -> dict[str, Any]:
    parameters = function.get("parameters") or {}
    properties = parameters.get("properties") if isinstance(parameters, dict) else None
    return properties if isinstance(properties, dict) else {}


def _arguments(function: dict[str, Any], rng: random.Random, words: Words) -> dict[str, Any]:
    return {name: _value(schema, rng, words) for name, schema in _properties(function).items()}


def _value(schema: Any, rng: random.Random, words: Words) -> Any:
    kind = schema.get("type") if isinstance(schema, dict) else None
    if isinstance(schema, dict) and schema.get("enum"):
        return rng.choice(schema["enum"])
    if kind == "integer":
        return rng.randint(1, 100)
    if kind == "number":
        return round(rng.uniform(0, 100), 2)
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "array":
        return [_value(schema.get("items") or {"type": "string"}, rng, words)]
    if kind == "object":
        return {}
    return " ".join(words(2))
