"""Reasoning over gRPC: a thinking model's decoded tokens come apart into thinking and answer,
with the thinking tokens counted, whatever the tokens per message; calls after the thinking
are parsed from the answer alone."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from backends.reasoning.think import ThinkParser
from backends.tool_calls.hermes import HermesParser
from backends.vllm_grpc.decoding import DecodeOptions
from backends.vllm_grpc.logprobs import TokenTexts
from backends.vllm_grpc.response_decoder import ResponseDecoder
from backends.vllm_grpc.tokenizer_store import TokenizerBundle, load_tokenizer_bundle
from standin.vllm.tokenizer_files import tokenizer_dir

THOUGHT = "the user asks about weather so call the tool"
OUTPUT = (
    f"<think>\n{THOUGHT}\n</think>\n\nLet me check."
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Köln"}}\n</tool_call>'
)


@pytest.fixture(scope="module")
def bundle() -> TokenizerBundle:
    return load_tokenizer_bundle(tokenizer_dir())


def _decode(bundle: TokenizerBundle, step: int) -> tuple[str, str, list[str], int]:
    """Thinking, answer, call names and thinking tokens of OUTPUT fed `step` ids at a time."""
    options = DecodeOptions(
        skip_special_tokens=True, spaces_between_special_tokens=True, prompt_ids=[]
    )
    decoder = ResponseDecoder(
        bundle, "chat", n=1, stops=[], include_stop_str=False, options=options, echo="",
        token_text=TokenTexts(bundle.tokenizer),
        tools=lambda: HermesParser(["get_weather"]),
        reasoning=lambda: ThinkParser("qwen3", starts_inside=False),
    )  # fmt: skip
    choice = decoder.choices[0]
    ids = bundle.encode(OUTPUT, add_special_tokens=False)
    deltas = [choice.feed(ids[i : i + step], None) for i in range(0, len(ids), step)]
    deltas.append(choice.finish("stop"))
    calls = [c["function"]["name"] for d in deltas for c in d.tool_calls or () if "id" in c]
    return (
        "".join(d.reasoning for d in deltas),
        "".join(d.text for d in deltas),
        calls,
        decoder.total_usage().reasoning_tokens,
    )


@pytest.mark.parametrize("step", [1, 3, 10_000])
def test_thinking_answer_and_call_whatever_the_message_size(
    bundle: TokenizerBundle, step: int
) -> None:
    """The same thinking, answer text, call and thinking-token count for any chunking."""
    reasoning, content, calls, tokens = _decode(bundle, step)
    assert reasoning == THOUGHT + "\n"
    assert content == "Let me check." and calls == ["get_weather"]
    thought_tokens = len(bundle.encode(THOUGHT, add_special_tokens=False))
    # The newlines around the thought and the first pieces of `</think>` count too.
    assert thought_tokens <= tokens <= thought_tokens + 8
    assert tokens == _decode(bundle, 1)[3]


def _cut(bundle: TokenizerBundle, tokens: int) -> tuple[str, str, bool]:
    """Thinking, answer and the last delta's `thought` of OUTPUT cut after `tokens` ids."""
    options = DecodeOptions(
        skip_special_tokens=True, spaces_between_special_tokens=True, prompt_ids=[]
    )
    decoder = ResponseDecoder(
        bundle, "chat", n=1, stops=[], include_stop_str=False, options=options, echo="",
        token_text=TokenTexts(bundle.tokenizer),
        reasoning=lambda: ThinkParser("qwen3", starts_inside=False),
    )  # fmt: skip
    choice = decoder.choices[0]
    ids = bundle.encode(OUTPUT, add_special_tokens=False)[:tokens]
    deltas = [choice.feed([token], None) for token in ids]
    deltas.append(choice.finish("length"))
    return "".join(d.reasoning for d in deltas), "".join(d.text for d in deltas), deltas[-1].thought


def test_a_cut_inside_a_marker_shows_none_of_it(bundle: TokenizerBundle) -> None:
    """Cut at every length: no piece of `<think>` or `</think>` in the thinking or the answer,
    and the last delta says whether the output went into thinking."""
    ids = bundle.encode(OUTPUT, add_special_tokens=False)
    opened = len(bundle.encode("<think>", add_special_tokens=False))
    for tokens in range(1, len(ids)):
        reasoning, content, thought = _cut(bundle, tokens)
        assert "<" not in reasoning and not content.startswith("<"), tokens
        assert thought == (tokens >= opened), tokens


def _content_logprobs(bundle: TokenizerBundle, output: str, step: int, tools: bool) -> list[str]:
    """The text of the logprobs of each delta of `output` fed `step` ids at a time, and then
    the whole content, last."""
    options = DecodeOptions(
        skip_special_tokens=True, spaces_between_special_tokens=True, prompt_ids=[]
    )
    decoder = ResponseDecoder(
        bundle, "chat", n=1, stops=[], include_stop_str=False, options=options, echo="",
        token_text=TokenTexts(bundle.tokenizer),
        tools=(lambda: HermesParser(["get_weather"])) if tools else lambda: None,
        reasoning=lambda: ThinkParser("qwen3", starts_inside=False),
    )  # fmt: skip
    choice = decoder.choices[0]
    ids = bundle.encode(output, add_special_tokens=False)
    logprobs = SimpleNamespace(token_ids=ids, token_logprobs=[-0.5] * len(ids), top_logprobs=[])
    deltas = [
        choice.feed(
            ids[i : i + step],
            SimpleNamespace(
                token_ids=ids[i : i + step],
                token_logprobs=logprobs.token_logprobs[i : i + step],
                top_logprobs=[],
            ),
        )
        for i in range(0, len(ids), step)
    ]
    deltas.append(choice.finish("stop"))
    shown = [
        bytes(b for entry in (d.logprobs or {"content": []})["content"] for b in entry["bytes"])
        for d in deltas
    ]
    assert all(d.logprobs is None or d.text for d in deltas)  # logprobs come with their text
    return [piece.decode() for piece in shown] + ["".join(d.text for d in deltas)]


@pytest.mark.parametrize("step", [1, 3, 10_000])
@pytest.mark.parametrize("tools", [False, True])
def test_logprobs_are_the_contents_tokens_alone(
    bundle: TokenizerBundle, step: int, tools: bool
) -> None:
    """Neither the thinking's tokens nor the markers' nor the call's markup have logprobs:
    the tokens' bytes join into the content, whatever the ids per message."""
    *shown, content = _content_logprobs(bundle, OUTPUT, step, tools)
    assert "".join(shown) == content
    expected = "Let me check." if tools else OUTPUT[OUTPUT.index("Let") :]
    assert content == expected
