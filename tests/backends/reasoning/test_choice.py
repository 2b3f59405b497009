"""Which reasoning format a chat template shows, whether a prompt leaves thinking open, and the
parser a choice gets from them."""

from __future__ import annotations

import pytest

from backends.reasoning.choice import FORMATS, SPECIAL_MARKERS, detect_format, reasoning_parser
from backends.reasoning.harmony import HarmonyParser
from backends.reasoning.parsed import Split
from backends.reasoning.think import ThinkParser, prompt_opens_reasoning
from standin.vllm.chat_templates import CHAT_TEMPLATE
from tests.backends.reasoning.harmony_samples import GPT_OSS_TEMPLATE
from tests.backends.tool_calls.test_choice import (
    DEEPSEEK_V3,
    DEEPSEEK_V31,
    LLAMA31,
    MISTRAL,
    QWEN3_CODER,
    QWEN25,
)

# Trimmed from the public templates: the parts that decide the format.
R1_TEMPLATE = (
    "{%- if '</think>' in content -%}{%- set content = content.split('</think>')[-1] -%}"
    "{%- endif -%}{{'<｜Assistant｜>' + content + '<｜end▁of▁sentence｜>'}}"
    "{%- if add_generation_prompt and not ns.is_tool -%}{{'<｜Assistant｜><think>\\n'}}{%- endif %}"
)
V31_TEMPLATE = (
    "{%- if not thinking is defined -%}{%- set thinking = false -%}{%- endif -%}"
    "{%- if add_generation_prompt -%}{{'<｜Assistant｜>'}}"
    "{%- if not thinking -%}{{'</think>'}}{%- else -%}{{'<think>'}}{%- endif -%}{%- endif %}"
)
QWEN3_TEMPLATE = (
    "{{- '<|im_start|>' + message.role + '\\n<think>\\n' + reasoning_content.strip('\\n') + "
    "'\\n</think>\\n\\n' + content.lstrip('\\n') }}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}"
    "{%- if enable_thinking is defined and enable_thinking is false %}"
    "{{- '<think>\\n\\n</think>\\n\\n' }}{%- endif %}{%- endif %}"
)
QWQ_TEMPLATE = (
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n<think>\\n' }}{%- endif %}"
)
QWEN25_TEMPLATE = "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        (R1_TEMPLATE, "deepseek_r1"),
        (V31_TEMPLATE, "qwen3"),
        (QWEN3_TEMPLATE, "qwen3"),
        (QWQ_TEMPLATE, "qwen3"),
        (QWEN25_TEMPLATE, None),
        ("{{ messages }}<think>", None),
        (R1_TEMPLATE + QWEN3_TEMPLATE, None),
        ("{{ messages }}", None),
        (GPT_OSS_TEMPLATE, "harmony"),
        ("{{ '<|start|>' + role + '<|channel|>final<|message|>' + content }}", "harmony"),
        (GPT_OSS_TEMPLATE + QWEN3_TEMPLATE, None),
        ("{{ '<|start|>' + role + '<|message|>' + content + '<|end|>' }}", None),
    ],
)
def test_detects_the_format_from_the_template(template: str, expected: str | None) -> None:
    """Harmony's messages, or think markers plus DeepSeek's or ChatML's turns, name the format
    (not both); anything else is None."""
    assert detect_format(template) == expected
    assert expected is None or expected in FORMATS


@pytest.mark.parametrize(
    ("prompt", "opens"),
    [
        ("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n", True),
        ("<｜User｜>Hi<｜Assistant｜><think>\n", True),
        ("<｜User｜>Hi<｜Assistant｜><think>", True),
        ("<|im_start|>assistant\n<think>\n\n</think>\n\n", False),
        ("<|im_start|>assistant\n", False),
        ("<|im_start|>assistant\n<think>\nI already began", False),
        ("<think>\nold\n</think>\n\nold answer<|im_end|>\n<|im_start|>assistant\n<think>\n", True),
        ("<think>\nold\n</think>\n\nold answer<|im_end|>\n<|im_start|>assistant\n", False),
    ],
)
def test_prompt_opens_reasoning(prompt: str, opens: bool) -> None:
    """Only a last `<think>` after the last `</think>`, followed by whitespace, is open."""
    assert prompt_opens_reasoning(prompt) is opens


def test_no_format_means_no_parser() -> None:
    """A model without a reasoning format gets no parser: its output is all content."""
    assert reasoning_parser(None, "<think>\n") is None


def test_the_prompt_decides_where_qwen3_starts() -> None:
    """qwen3 starts inside reasoning only after a prompt that opened it; deepseek_r1 always."""
    opened = reasoning_parser("qwen3", "<|im_start|>assistant\n<think>\n")
    closed = reasoning_parser("qwen3", "<|im_start|>assistant\n<think>\n\n</think>\n\n")
    r1 = reasoning_parser("deepseek_r1", "<｜Assistant｜>")
    assert isinstance(opened, ThinkParser) and opened.in_reasoning
    assert closed is not None and not closed.in_reasoning
    assert closed.feed("Hello").content == "Hello"
    assert r1 is not None and r1.in_reasoning


@pytest.mark.parametrize(
    "template",
    [
        *(R1_TEMPLATE, V31_TEMPLATE, QWEN3_TEMPLATE, QWQ_TEMPLATE, QWEN25_TEMPLATE, CHAT_TEMPLATE),
        *(QWEN3_CODER, QWEN25, MISTRAL, LLAMA31, DEEPSEEK_V3, DEEPSEEK_V31),
    ],
)
def test_no_other_template_is_taken_for_harmony(template: str) -> None:
    """The other formats' templates (and the stand-in's) are never read as Harmony."""
    assert detect_format(template) != "harmony"


def test_harmony_gets_its_parser_whatever_the_prompt_ends_with() -> None:
    """Harmony's prompt ends at `<|start|>assistant`: the output starts at a header, outside
    reasoning, and its markers are special tokens to keep when decoding."""
    parser = reasoning_parser("harmony", "<|start|>user<|message|>Hi<|end|><|start|>assistant")
    assert isinstance(parser, HarmonyParser) and not parser.in_reasoning
    assert parser.feed("<|channel|>final<|message|>Hello") == Split("", "Hello")
    assert {"harmony"} == SPECIAL_MARKERS


def test_unknown_format_is_refused() -> None:
    """A configured format that does not exist is an error naming the ones that do."""
    with pytest.raises(ValueError, match="deepseek_r1, qwen3"):
        reasoning_parser("granite", "")
