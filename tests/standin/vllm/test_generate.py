"""Generate over real gRPC: DELTA chunks and completes exactly as the real servicer sends them."""

from __future__ import annotations

from typing import Any

import grpc
import pytest
from smg_grpc_proto.generated import vllm_engine_pb2_grpc as pb_grpc

from standin.vllm.config import SimConfig
from standin.vllm.sampling import SamplingSpec
from standin.vllm.served_model import expected_generation, load_model
from standin.vllm.server import SimServer
from tests.standin.vllm.conftest import StartSim
from tests.standin.vllm.helpers import collect, generate_request

EOS = load_model().vocab.eos_id


def chunks_of(messages: list[Any], index: int = 0) -> list[Any]:
    return [m.chunk for m in messages if m.HasField("chunk") and m.chunk.index == index]


def completes(messages: list[Any]) -> list[Any]:
    return [m.complete for m in messages if m.HasField("complete")]


def streamed_ids(messages: list[Any], index: int = 0) -> list[int]:
    return [token for chunk in chunks_of(messages, index) for token in chunk.token_ids]


async def test_stream_sends_deltas_then_complete_repeating_last_delta(stub: Any) -> None:
    """Chunks carry one new token each; the complete repeats the last delta."""
    messages = await collect(stub, generate_request("hello world"))
    expected = expected_generation("hello world")
    assert streamed_ids(messages) == list(expected.token_ids)
    chunks = chunks_of(messages)
    assert all(chunk.completion_tokens == len(chunk.token_ids) == 1 for chunk in chunks)
    prompt_tokens = len(load_model().vocab.encode("hello world"))
    assert all(chunk.prompt_tokens == prompt_tokens for chunk in chunks)
    assert messages[-1].HasField("complete")
    (complete,) = completes(messages)
    assert list(complete.output_ids) == list(chunks[-1].token_ids) == [EOS]
    assert complete.completion_tokens == 1
    assert complete.finish_reason == "stop"
    assert complete.WhichOneof("matched_stop") == "matched_token_id"
    assert complete.matched_token_id == EOS
    assert complete.prompt_tokens == prompt_tokens


async def test_tokens_per_chunk_groups_tokens(start_sim: StartSim) -> None:
    """tokens_per_chunk=4 sends four tokens per chunk, the rest in the last."""
    server = await start_sim(tokens_per_chunk=4)
    async with grpc.aio.insecure_channel(server.address) as channel:
        messages = await collect(pb_grpc.VllmEngineStub(channel), generate_request())
    sizes = [len(chunk.token_ids) for chunk in chunks_of(messages)]
    assert sizes == [4, 4, 4, 4, 1]
    assert list(completes(messages)[0].output_ids) == [EOS]


async def test_n2_interleaves_chunks_with_one_complete_each(stub: Any) -> None:
    """With n=2 the chunks alternate by index and each index ends with its own complete."""
    messages = await collect(stub, generate_request(n=2, max_tokens=6, seed=3))
    kinds = [
        (m.WhichOneof("response"), getattr(m, m.WhichOneof("response")).index) for m in messages
    ]
    assert kinds[:4] == [("chunk", 0), ("chunk", 1), ("chunk", 0), ("chunk", 1)]
    assert sorted(c.index for c in completes(messages)) == [0, 1]
    for index in (0, 1):
        spec = SamplingSpec(max_tokens=6, seed=3, n=2)
        expected = expected_generation("hello world", spec, index=index)
        assert streamed_ids(messages, index) == list(expected.token_ids)
    assert streamed_ids(messages, 0) != streamed_ids(messages, 1)


async def test_non_streaming_sends_one_complete_per_index(stub: Any) -> None:
    """stream=false returns only completes carrying every output token."""
    messages = await collect(stub, generate_request(stream=False, n=2))
    assert all(m.HasField("complete") for m in messages)
    for complete in completes(messages):
        expected = expected_generation("hello world", SamplingSpec(n=2), index=complete.index)
        assert list(complete.output_ids) == list(expected.token_ids)
        assert complete.completion_tokens == len(expected.token_ids)
        assert complete.finish_reason == "stop"


async def test_max_tokens_finishes_with_length(stub: Any) -> None:
    """max_tokens below the natural length ends with finish "length" and no matched stop."""
    messages = await collect(stub, generate_request(max_tokens=3))
    assert len(streamed_ids(messages)) == 3
    (complete,) = completes(messages)
    assert complete.finish_reason == "length"
    assert complete.WhichOneof("matched_stop") is None


async def test_stop_string_ids_include_completing_token(stub: Any) -> None:
    """A stop string ends the stream at the token completing it, reported as matched_stop_str."""
    base = expected_generation("hello world")
    stop = base.text[6:9]
    expected = expected_generation("hello world", SamplingSpec(stop=(stop,)))
    messages = await collect(stub, generate_request(stop=[stop]))
    assert streamed_ids(messages) == list(expected.token_ids)
    assert stop in load_model().vocab.decode(expected.token_ids)
    (complete,) = completes(messages)
    assert complete.finish_reason == "stop"
    assert complete.matched_stop_str == stop


async def test_stop_token_id_is_reported(stub: Any) -> None:
    """A stop token id ends the stream and is reported as matched_token_id."""
    stop_id = expected_generation("hello world").token_ids[2]
    messages = await collect(stub, generate_request(stop_token_ids=[stop_id]))
    assert streamed_ids(messages)[-1] == stop_id
    assert completes(messages)[0].matched_token_id == stop_id


async def test_output_is_deterministic_and_seeded(stub: Any) -> None:
    """The same request twice gives the same tokens; another seed gives others."""
    first = streamed_ids(await collect(stub, generate_request(seed=11)))
    again = streamed_ids(await collect(stub, generate_request(seed=11, request_id="req-2")))
    other = streamed_ids(await collect(stub, generate_request(seed=12)))
    assert first == again
    assert first != other


async def test_temperature_zero_is_deterministic(stub: Any) -> None:
    """Greedy requests repeat exactly."""
    first = await collect(stub, generate_request(temperature=0.0))
    assert streamed_ids(first) == streamed_ids(
        await collect(stub, generate_request(temperature=0.0))
    )


async def test_tokenized_and_text_inputs_agree(stub: Any) -> None:
    """Token ids of the text give the same output as the text."""
    ids = load_model().vocab.encode("hello world")
    text = await collect(stub, generate_request("hello world"))
    tokens = await collect(stub, generate_request(ids))
    assert streamed_ids(text) == streamed_ids(tokens)


async def test_unset_max_tokens_runs_to_the_context_limit(start_sim: StartSim) -> None:
    """Without max_tokens, ignore_eos generates up to max_context_length."""
    server = await start_sim(max_context_length=40)
    async with grpc.aio.insecure_channel(server.address) as channel:
        messages = await collect(
            pb_grpc.VllmEngineStub(channel), generate_request([5] * 10, ignore_eos=True)
        )
    assert len(streamed_ids(messages)) == 30
    assert completes(messages)[0].finish_reason == "length"


@pytest.mark.parametrize(
    ("request_fields", "fragment"),
    [
        ({"prompt": []}, "cannot be empty"),
        ({"temperature": -1.0}, "temperature"),
        ({"top_p": 1.5}, "top_p"),
        ({"logit_bias": {5000: 1.0}}, "logit_bias"),
        ({"prompt": [5] * 5000}, "maximum model length"),
        ({"max_tokens": 0}, "max_tokens"),
    ],
)
async def test_bad_requests_are_invalid_argument(
    stub: Any, request_fields: dict[str, Any], fragment: str
) -> None:
    """Validation failures answer INVALID_ARGUMENT with vLLM's message."""
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await collect(stub, generate_request(**request_fields))
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert fragment in (caught.value.details() or "")


async def test_regex_is_unimplemented(stub: Any) -> None:
    """A regex constraint is refused as UNIMPLEMENTED."""
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await collect(stub, generate_request(regex="[a-z]+"))
    assert caught.value.code() == grpc.StatusCode.UNIMPLEMENTED


async def test_logprobs_ride_on_chunks_and_complete(stub: Any) -> None:
    """Each chunk carries its tokens' logprobs; the complete repeats the last delta's."""
    messages = await collect(stub, generate_request(logprobs=2, max_tokens=4))
    expected = expected_generation("hello world", SamplingSpec(logprobs=2, max_tokens=4))
    assert expected.logprobs is not None
    chunks = chunks_of(messages)
    for position, chunk in enumerate(chunks):
        assert list(chunk.output_logprobs.token_ids) == [expected.token_ids[position]]
        assert list(chunk.output_logprobs.token_logprobs) == [expected.logprobs.values[position]]
        top = chunk.output_logprobs.top_logprobs[0]
        assert list(top.token_ids) == list(expected.logprobs.top_ids[position])
    assert completes(messages)[0].output_logprobs == chunks[-1].output_logprobs


async def test_prompt_logprobs_on_first_chunk_only(stub: Any) -> None:
    """input_logprobs ride on the first chunk and the complete; the first position is empty."""
    messages = await collect(stub, generate_request(prompt_logprobs=1, max_tokens=3))
    chunks = chunks_of(messages)
    first = chunks[0].input_logprobs
    assert not first.token_logprobs[0].HasField("value")
    assert first.token_logprobs[1].HasField("value")
    assert not chunks[1].HasField("input_logprobs")
    assert completes(messages)[0].input_logprobs == first


async def test_repeated_long_prompt_reports_cached_tokens(stub: Any) -> None:
    """The second time a long prompt is seen, its full blocks count as cached."""
    prompt = list(range(10, 60))
    await collect(stub, generate_request(prompt, max_tokens=1))
    messages = await collect(stub, generate_request(prompt, max_tokens=1))
    assert completes(messages)[0].cached_tokens == 48
    assert chunks_of(messages)[0].cached_tokens == 48


async def test_json_object_output_is_json(stub: Any) -> None:
    """json_object requests get a JSON object."""
    messages = await collect(stub, generate_request(json_object=True, stream=False))
    ids = list(completes(messages)[0].output_ids)
    import json

    assert isinstance(json.loads(load_model().vocab.decode(ids)), dict)


async def test_paced_stream_still_delivers_everything(start_sim: StartSim) -> None:
    """With latency knobs set the content is unchanged."""
    server = await start_sim(ttft_ms=5, itl_ms=1)
    async with grpc.aio.insecure_channel(server.address) as channel:
        messages = await collect(pb_grpc.VllmEngineStub(channel), generate_request())
    assert streamed_ids(messages) == list(expected_generation("hello world").token_ids)


async def test_invocation_metadata_is_recorded(sim: SimServer, stub: Any) -> None:
    """Stats keep the last Generate's metadata (trace context)."""
    traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    call = stub.Generate(generate_request(), metadata=(("traceparent", traceparent),), timeout=30)
    _ = [message async for message in call]
    stats = sim.stats()
    assert stats["last_metadata"]["traceparent"] == traceparent
    assert stats["generate_calls"] == 1
    assert stats["completed"] == 1


def test_expected_generation_follows_the_server_config() -> None:
    """expected_generation takes the same config as the server."""
    gen = expected_generation("hello world", config=SimConfig(output_tokens=3))
    assert len(gen.token_ids) == 4
