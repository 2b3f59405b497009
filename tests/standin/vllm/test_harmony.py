"""The stand-in as a gpt-oss-like model (`harmony`): a tokenizer with Harmony's special tokens
that keeps every id of the default one, a chat template the gateway reads as Harmony, and
output in Harmony's messages that the gateway's parsers take apart, token by token."""

from __future__ import annotations

from typing import Any

import grpc
import pytest
from smg_grpc_proto.generated import vllm_engine_pb2_grpc as pb_grpc
from tokenizers import Tokenizer

from backends.reasoning import choice as reasoning_choice
from backends.reasoning.harmony import HarmonyParser as HarmonyReasoning
from backends.tool_calls import choice as tool_choice
from backends.tool_calls.functions import Functions
from backends.tool_calls.harmony import HarmonyParser
from backends.vllm_grpc.chat_template import render_chat
from backends.vllm_grpc.tokenizer_store import TokenizerBundle, load_tokenizer_bundle
from standin.vllm import tokenizer_files
from standin.vllm.config import SimConfig
from standin.vllm.generator import SimModel
from standin.vllm.sampling import Generation, SamplingSpec
from standin.vllm.served_model import load_model, model_for
from tests.backends.tool_calls.helpers import call_values
from tests.standin.vllm.conftest import StartSim
from tests.standin.vllm.helpers import collect, generate_request

CONFIG = SimConfig(harmony=True, output_tokens=12)
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}
FUNCTIONS = Functions.from_tools([WEATHER])
Parsed = tuple[str, str, list[tuple[str, Any]]]


@pytest.fixture(scope="module")
def model() -> SimModel:
    return model_for(CONFIG)


@pytest.fixture(scope="module")
def bundle(model: SimModel) -> TokenizerBundle:
    return load_tokenizer_bundle(model.vocab.directory)


def _generate(model: SimModel, bundle: TokenizerBundle, messages: list[Any], **kw: Any) -> Any:
    """What the model answers to `messages` rendered by the gateway's template code."""
    tools = kw.pop("tools", None)
    template = bundle.chat_template(tools=tools is not None)
    prompt = render_chat(template, messages, add_generation_prompt=True, tools=tools)
    ids = bundle.encode(prompt, add_special_tokens=False)
    return model.generate(ids, SamplingSpec(**kw), output_tokens=12, max_context_length=4096)


def _parsed(model: SimModel, bundle: TokenizerBundle, gen: Generation) -> Parsed:
    """Reasoning, answer and calls of `gen`, decoded token by token with special tokens kept
    and the final EOS hidden, as the gateway decodes Harmony."""
    ids = list(gen.token_ids)
    if ids and ids[-1] in bundle.eos_token_ids:
        ids = ids[:-1]
    tokenizer: Tokenizer = model.vocab.tokenizer
    texts = [tokenizer.decode(ids[: k + 1], skip_special_tokens=False) for k in range(len(ids))]
    pieces = [text[len(before) :] for before, text in zip(["", *texts], texts, strict=False)]
    reasoning, tools = HarmonyReasoning(), HarmonyParser(FUNCTIONS)
    thought, answer, parsed = "", "", []
    for piece in [*pieces, None]:
        split = reasoning.feed(piece) if piece is not None else reasoning.finish()
        done = [tools.feed(split.content)] + ([tools.finish()] if piece is None else [])
        thought += split.reasoning
        answer += "".join(d.content for d in done)
        parsed += done
    return thought, answer, call_values(parsed)


def test_the_harmony_tokenizer_keeps_every_default_id(model: SimModel) -> None:
    """The default vocabulary is unchanged; Harmony's tokens come after it, all special."""
    default = load_model().vocab.tokenizer.get_vocab(with_added_tokens=True)
    harmony = model.vocab.tokenizer.get_vocab(with_added_tokens=True)
    assert {k: harmony[k] for k in default} == default
    added = [harmony[token] for token in tokenizer_files.HARMONY_SPECIAL_TOKENS]
    assert min(added) == len(default) and set(added) <= model.vocab.special_ids
    assert model.harmony and not load_model().harmony


def test_the_gateway_reads_the_template_as_harmony(bundle: TokenizerBundle) -> None:
    """Both detectors name Harmony; `<|return|>` and `<|call|>` both end the output."""
    source = bundle.chat_template(tools=True).source
    assert reasoning_choice.detect_format(source) == "harmony"
    assert tool_choice.detect_format(source) == "harmony"
    ends = {bundle.encode(t, add_special_tokens=False)[0] for t in ("<|return|>", "<|call|>")}
    assert set(bundle.eos_token_ids) == ends


def test_an_answer_thinks_then_answers_on_final(model: SimModel, bundle: TokenizerBundle) -> None:
    """Without tools: analysis, then the final answer, ended by EOS (`<|return|>`)."""
    gen = _generate(model, bundle, [{"role": "user", "content": "hello"}])
    assert gen.finish_reason == "stop" and gen.matched_token_id == model.vocab.eos_id
    thought, answer, calls = _parsed(model, bundle, gen)
    assert thought and answer and calls == []
    assert "<|" not in thought + answer


@pytest.mark.parametrize(
    ("marker", "preamble", "called"),
    [
        ("", True, 1),
        ("[[single]]", False, 1),
        ("[[parallel]]", False, 1),
        ("[[malformed]]", True, 0),
    ],
)
def test_a_call_stops_at_its_call_token(
    model: SimModel, bundle: TokenizerBundle, marker: str, preamble: bool, called: int
) -> None:
    """With tools: thinking, maybe a preamble, then a call the engine stops at (`<|call|>`,
    so parallel calls come one at a time); a malformed call stays text."""
    ask = [{"role": "user", "content": f"weather in Oslo? {marker}"}]
    gen = _generate(model, bundle, ask, tools=[WEATHER])
    call_id = bundle.encode("<|call|>", add_special_tokens=False)[0]
    assert gen.finish_reason == "stop" and gen.matched_token_id == call_id
    thought, answer, calls = _parsed(model, bundle, gen)
    assert thought and len(calls) == called
    assert all(name == "get_weather" and set(args) == {"city"} for name, args in calls)
    assert bool(answer) == (preamble or not called)
    assert ("<|" in answer) == (not called)


def test_after_a_tool_result_it_answers(model: SimModel, bundle: TokenizerBundle) -> None:
    """A tool's result as the last message gets a final answer, not another call."""
    call = {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": {}}}
    messages = [
        {"role": "user", "content": "weather? [[single]]"},
        {"role": "assistant", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
    ]
    gen = _generate(model, bundle, messages, tools=[WEATHER])
    assert gen.matched_token_id == model.vocab.eos_id
    thought, answer, calls = _parsed(model, bundle, gen)
    assert thought and answer and calls == []


def test_harmony_is_chosen_at_startup() -> None:
    """A running server cannot switch models."""
    with pytest.raises(ValueError, match="harmony"):
        SimConfig().updated({"harmony": True}, startup=False)


async def test_the_server_streams_harmony(start_sim: StartSim, bundle: TokenizerBundle) -> None:
    """Served over gRPC, a prompt gets the same Harmony output as the model computes."""
    server = await start_sim(harmony=True, output_tokens=12)
    prompt = bundle.encode("<|start|>user<|message|>hi<|end|><|start|>assistant", False)
    async with grpc.aio.insecure_channel(server.address) as channel:
        request = generate_request(prompt, stream=False)
        messages = await collect(pb_grpc.VllmEngineStub(channel), request)
    (complete,) = [m.complete for m in messages if m.HasField("complete")]
    expected = model_for(CONFIG).generate(
        prompt, SamplingSpec(), output_tokens=12, max_context_length=CONFIG.max_context_length
    )
    assert list(complete.output_ids) == list(expected.token_ids)
    assert complete.output_ids[0] == bundle.encode("<|channel|>", False)[0]
