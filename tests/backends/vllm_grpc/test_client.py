"""The gRPC client against the stand-in over loopback: whole answers, batched prompts,
deadlines, aborts, embeddings."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from backends.base import EmbeddingCall, GenerationRequest
from backends.fleet import Fleet
from backends.replica import Replica
from backends.vllm_grpc import embed_calls
from backends.vllm_grpc.client import VllmGrpcBackend
from backends.vllm_grpc.request_builder import prepare
from backends.vllm_grpc.tokenizer_store import load_tokenizer_bundle
from budgets.deadline import Deadline
from budgets.request_budget import ClassBudgets, RequestBudget
from core.backend_errors import BackendRejected
from core.errors import ContextLengthExceeded, DeadlineExceeded, InvalidRequest
from core.protocol import (
    MAX_EMBEDDING_INPUTS,
    ChatCompletionRequest,
    CompletionRequest,
    EmbeddingRequest,
)
from core.request_parsing import parse_request
from standin.vllm.config import SimConfig
from standin.vllm.embedding import embed
from standin.vllm.server import SimServer
from standin.vllm.tokenizer_files import tokenizer_dir
from tests.standin.vllm.helpers import wait_until


@pytest.fixture
async def sim() -> AsyncIterator[SimServer]:
    server = SimServer(SimConfig(port=0))
    await server.start()
    yield server
    await server.stop(grace=0)


@pytest.fixture
async def backend(sim: SimServer, tmp_path: Path) -> AsyncIterator[VllmGrpcBackend]:
    client = VllmGrpcBackend(
        f"grpc://{sim.address}",
        model="sim",
        channels=1,
        tokenizer_dir=None,
        tokenizer_cache_dir=tmp_path,
        watch_whole_answers=True,
    )
    await client.start()
    yield client
    await client.aclose()


def _request(request_id: str, *, stream: bool = False, **fields: Any) -> GenerationRequest:
    body = {"model": "sim", "messages": [{"role": "user", "content": "hi"}], "stream": stream}
    raw = orjson.dumps({**body, **fields})
    return GenerationRequest("chat", parse_request(raw, ChatCompletionRequest), raw, request_id)


def _completion(request_id: str, *, stream: bool = False, **fields: Any) -> GenerationRequest:
    raw = orjson.dumps({"model": "sim", "prompt": "hi", "stream": stream, **fields})
    return GenerationRequest("completion", parse_request(raw, CompletionRequest), raw, request_id)


BATCH = ["Once upon a time", "In a galaxy far away"]


def _budget(*, ttft_s: float = 60.0, stall_s: float = 60.0, total_s: float = 60.0) -> RequestBudget:
    budgets = ClassBudgets(total_s=total_s, ttft_s=ttft_s, admission_s=ttft_s, stall_s=stall_s)
    return RequestBudget.start("interactive", budgets, time.monotonic, time.monotonic())


def _fleet(backend: VllmGrpcBackend) -> Fleet:
    replica = Replica("sim", backend, healthy=True)
    return Fleet([replica], retry_attempts=1, health_interval_s=60, health_timeout_s=1)


async def test_whole_answer_equals_the_streamed_one(backend: VllmGrpcBackend) -> None:
    """A whole answer (streamed on the wire, decoded at its end) has the text, logprobs and
    usage the same request gets as a stream, for every choice."""
    fields: dict[str, Any] = {"n": 2, "logprobs": True, "top_logprobs": 2, "max_tokens": 12}
    whole = await backend.complete(_request("w-1", **fields), Deadline.after(30))
    texts: dict[int, str] = {0: "", 1: ""}
    logprobs: dict[int, list[Any]] = {0: [], 1: []}
    usage = None
    async for chunk in backend.stream(_request("w-2", stream=True, **fields), Deadline.after(30)):
        for delta in chunk.deltas:
            texts[delta.index] += delta.text
            logprobs[delta.index] += (delta.logprobs or {}).get("content") or []
        usage = chunk.usage or usage
    assert [c.text for c in whole.choices] == [texts[0], texts[1]] and texts[0]
    assert [c.logprobs["content"] for c in whole.choices] == [logprobs[0], logprobs[1]]
    assert usage is not None and whole.usage.completion_tokens == usage.completion_tokens
    assert whole.usage.prompt_tokens == usage.prompt_tokens > 0


@pytest.mark.parametrize("stop", [None, ["quick"]])
async def test_logprobs_run_to_the_token_that_ended_the_answer(
    backend: VllmGrpcBackend, stop: list[str] | None
) -> None:
    """Whole or streamed, a choice's logprobs list every token up to the one that ended it,
    as vLLM's, but for the EOS it hides: their bytes join into the text, then the stop string
    it trims (and what the token that completed it holds after it)."""
    messages = [{"role": "user", "content": "Explain gateways in detail please"}]
    fields: dict[str, Any] = {"messages": messages, "logprobs": True, "stop": stop}
    fields.update(max_tokens=40, temperature=0)
    whole = (await backend.complete(_request("t-1", **fields), Deadline.after(30))).choices[0]
    text, logprobs = "", list[Any]()
    async for chunk in backend.stream(_request("t-2", stream=True, **fields), Deadline.after(30)):
        for delta in chunk.deltas:
            text += delta.text
            logprobs += (delta.logprobs or {}).get("content") or []
    assert whole.text == text and whole.logprobs["content"] == logprobs
    shown = bytes(b for entry in logprobs for b in entry["bytes"]).decode()
    assert whole.finish_reason == "stop" and shown.startswith(text)
    if stop is None:
        assert shown == text
    else:
        assert shown[len(text) :].startswith("quick")


@pytest.mark.parametrize("logprobs", [None, 1])
async def test_an_echo_alone_is_the_prompt(backend: VllmGrpcBackend, logprobs: int | None) -> None:
    """`echo` with `max_tokens: 0`, whole or streamed: the prompt, with its logprobs when
    asked, nothing generated (the engine's one token is dropped, and not counted)."""
    fields: dict[str, Any] = {"prompt": "one two three", "echo": True, "max_tokens": 0}
    fields["logprobs"] = logprobs
    whole = await backend.complete(_completion("e-1", **fields), Deadline.after(30))
    text, tokens, usage = "", list[str](), None
    stream = backend.stream(_completion("e-2", stream=True, **fields), Deadline.after(30))
    async for chunk in stream:
        for delta in chunk.deltas:
            text += delta.text
            tokens += (delta.logprobs or {}).get("tokens") or []
        usage = chunk.usage or usage
    (choice,) = whole.choices
    assert choice.text == text == "one two three" and choice.finish_reason == "length"
    assert whole.usage.completion_tokens == 0 and usage is not None
    assert usage.completion_tokens == 0 and usage.prompt_tokens == whole.usage.prompt_tokens
    if logprobs is None:
        assert choice.logprobs is None and not tokens
    else:
        assert "".join(choice.logprobs["tokens"]) == "".join(tokens) == "one two three"
        assert choice.logprobs["token_logprobs"][0] is None


async def test_unwatched_whole_answer_is_the_same(
    sim: SimServer, backend: VllmGrpcBackend, tmp_path: Path
) -> None:
    """Unwatched (GATEWAY_GRPC_WATCH_WHOLE_ANSWERS=false, the default) the answer is asked for
    unstreamed (cheaper, bound by the total only) and decodes the same."""
    plain = VllmGrpcBackend(
        f"grpc://{sim.address}",
        model="sim",
        channels=1,
        tokenizer_dir=None,
        tokenizer_cache_dir=tmp_path,
        watch_whole_answers=False,
    )
    await plain.start()
    try:
        fields: dict[str, Any] = {"n": 2, "logprobs": True, "max_tokens": 12}
        unwatched = await plain.complete(_request("u-1", **fields), Deadline.after(30))
        watched = await backend.complete(_request("u-2", **fields), Deadline.after(30))
    finally:
        await plain.aclose()
    assert not plain.reports_progress and backend.reports_progress
    assert unwatched.choices == watched.choices
    assert unwatched.usage.completion_tokens == watched.usage.completion_tokens


@pytest.mark.parametrize(
    ("fault", "budget", "stage"),
    [
        ({"hang_rate": 1.0}, {"ttft_s": 0.3}, "ttft"),
        ({"itl_ms": 60_000}, {"stall_s": 0.3}, "stall"),
    ],
)
async def test_whole_answer_that_makes_no_progress_fails_at_its_budget(
    sim: SimServer,
    backend: VllmGrpcBackend,
    fault: dict[str, float],
    budget: dict[str, float],
    stage: str,
) -> None:
    """A replica that takes a non-streamed request and never answers holds it only until the
    first-token budget, and a gap between two of its tokens longer than the stall budget ends
    it, as it ends a stream (504 naming the stage, the engine told to abort), not the total.
    The failure says how many tokens had come (what admission judges a run-out by)."""
    sim.configure(**fault)
    request_id = f"no-progress-{stage}"
    started = time.monotonic()
    with pytest.raises(DeadlineExceeded) as info:
        await _fleet(backend).complete(_request(request_id), _budget(**budget))
    assert info.value.stage == stage and time.monotonic() - started < 30.0
    assert info.value.produced == (0 if stage == "ttft" else 1)
    await wait_until(lambda: request_id in sim.state.aborted_request_ids)


async def test_whole_answer_past_its_total_says_how_far_it_got(
    sim: SimServer, backend: VllmGrpcBackend
) -> None:
    """A watched whole answer still coming at its total: the failure names the total and
    counts the tokens that had come (the gRPC deadline itself knows none)."""
    sim.configure(itl_ms=200)
    with pytest.raises(DeadlineExceeded) as info:
        await _fleet(backend).complete(_request("total-1", max_tokens=1000), _budget(total_s=1))
    produced = info.value.produced
    assert info.value.stage == "total" and produced is not None and produced < 1000


async def test_answer_past_its_deadline_is_aborted(
    sim: SimServer, backend: VllmGrpcBackend
) -> None:
    """A whole answer whose gRPC deadline fires is a 504 naming it, and the engine gets
    Abort, as when a client leaves."""
    sim.configure(ttft_ms=60_000)
    with pytest.raises(DeadlineExceeded) as info:
        await backend.complete(_request("late-1"), Deadline.after(0.2))
    assert info.value.stage == "total"
    await wait_until(lambda: "late-1" in sim.state.aborted_request_ids)


async def test_stream_past_its_deadline_is_aborted(
    sim: SimServer, backend: VllmGrpcBackend
) -> None:
    """The same for a stream whose gRPC deadline fires before any chunk."""
    sim.configure(ttft_ms=60_000)
    with pytest.raises(DeadlineExceeded):
        async for _chunk in backend.stream(_request("late-2", stream=True), Deadline.after(0.2)):
            pass
    await wait_until(lambda: "late-2" in sim.state.aborted_request_ids)


async def test_a_batch_is_each_prompt_answered_alone(backend: VllmGrpcBackend) -> None:
    """A batch is one Generate per prompt: choice `i * n + j` is choice j of prompt i as that
    prompt alone gets it, whole and streamed, with the usage of all of them summed (streamed:
    once, on the last chunk)."""
    fields: dict[str, Any] = {"n": 2, "seed": 3, "max_tokens": 8}
    alone = [
        await backend.complete(_completion(f"alone-{i}", prompt=p, **fields), Deadline.after(30))
        for i, p in enumerate(BATCH)
    ]
    expected = [choice.text for answer in alone for choice in answer.choices]
    whole = await backend.complete(_completion("batch", prompt=BATCH, **fields), Deadline.after(30))
    assert [c.index for c in whole.choices] == [0, 1, 2, 3]
    assert [c.text for c in whole.choices] == expected and all(expected)
    assert whole.usage.prompt_tokens == sum(a.usage.prompt_tokens for a in alone)
    assert whole.usage.completion_tokens == sum(a.usage.completion_tokens for a in alone)
    texts: dict[int, str] = {}
    finished: set[int] = set()
    usages = []
    request = _completion("batch-s", stream=True, prompt=BATCH, **fields)
    async for chunk in backend.stream(request, Deadline.after(30)):
        for delta in chunk.deltas:
            texts[delta.index] = texts.get(delta.index, "") + delta.text
            if delta.finish_reason is not None:
                finished.add(delta.index)
        if chunk.usage is not None:
            usages.append(chunk.usage)
    assert [texts[i] for i in range(4)] == expected and finished == {0, 1, 2, 3}
    assert [(u.prompt_tokens, u.completion_tokens) for u in usages] == [
        (whole.usage.prompt_tokens, whole.usage.completion_tokens)
    ]


@pytest.mark.parametrize("prompt", ["Once upon a time", BATCH])
async def test_a_stream_tells_its_prompt_and_tokens_before_its_usage(
    backend: VllmGrpcBackend, prompt: str | list[str]
) -> None:
    """Each prompt's first chunk reports its prompt tokens, and the chunks' token counts add
    up to the usage: what a stream that breaks before its usage has cost is known."""
    request = _completion("told", stream=True, prompt=prompt, n=2, max_tokens=6)
    told = tokens = 0
    usage = None
    async for chunk in backend.stream(request, Deadline.after(30)):
        told += chunk.prompt_tokens
        tokens += sum(delta.token_count for delta in chunk.deltas)
        usage = chunk.usage or usage
    assert usage is not None and usage.prompt_tokens > 0
    assert (told, tokens) == (usage.prompt_tokens, usage.completion_tokens)


async def test_a_batch_is_checked_whole_before_any_prompt_is_sent(
    sim: SimServer, backend: VllmGrpcBackend
) -> None:
    """A prompt of the batch that cannot fit the context is a 400 naming `prompt` before the
    engine hears of any of them."""
    before = sim.state.counters.generate_calls
    prompts = ["hi", "word " * 5000]
    with pytest.raises(ContextLengthExceeded) as whole:
        await backend.complete(_completion("long", prompt=prompts), Deadline.after(30))
    streamed = backend.stream(
        _completion("long-s", stream=True, prompt=prompts), Deadline.after(30)
    )
    with pytest.raises(ContextLengthExceeded) as stream:
        await anext(streamed)
    assert whole.value.param == stream.value.param == "prompt"
    assert sim.state.counters.generate_calls == before


async def test_a_batch_stream_left_early_aborts_every_prompt(
    sim: SimServer, backend: VllmGrpcBackend
) -> None:
    """Closing a batched stream (the client left) ends every prompt's Generate upstream."""
    sim.configure(itl_ms=200)
    request = _completion("left", stream=True, prompt=BATCH, max_tokens=50)
    chunks = backend.stream(request, Deadline.after(30))
    await anext(chunks)
    await chunks.aclose()

    def ended() -> bool:
        gone = {*sim.state.aborted_request_ids, *sim.state.cancelled_request_ids}
        return {"left-0", "left-1"} <= gone

    await wait_until(ended)


def _embedding(request_id: str, inputs: Any) -> EmbeddingCall:
    raw = orjson.dumps({"model": "sim", "input": inputs})
    return EmbeddingCall(parse_request(raw, EmbeddingRequest), raw, request_id)


async def test_a_full_batch_of_embeddings_is_answered_a_few_calls_at_a_time(
    sim: SimServer, backend: VllmGrpcBackend
) -> None:
    """2048 inputs (OpenAI's most) are each embedded, in order, without the engine ever
    running more than one request's share of Embed calls at once."""
    sim.configure(embed_ms=2)
    texts = [f"text number {i}" for i in range(MAX_EMBEDDING_INPUTS)]
    answer = await backend.embed(_embedding("e-all", texts), Deadline.after(60))
    bundle = load_tokenizer_bundle(tokenizer_dir())
    expected = [embed(bundle.encode(t, add_special_tokens=True), 384) for t in texts[:3]]
    assert len(answer.vectors) == MAX_EMBEDDING_INPUTS
    for got, wanted in zip(answer.vectors, expected, strict=False):
        assert got == pytest.approx(wanted, abs=1e-6)
    assert sim.state.counters.embed_calls == MAX_EMBEDDING_INPUTS
    assert 1 < sim.state.counters.embeds_peak <= embed_calls.PER_REQUEST


async def test_a_rejected_input_cancels_the_others_and_is_named(
    sim: SimServer, backend: VllmGrpcBackend
) -> None:
    """The engine refusing one input is a 400 naming it, and the calls still running for the
    others end at once (cancelled) instead of running on to their deadline."""
    sim.configure(embed_ms=60_000, max_context_length=8)  # the others run until cancelled
    texts = ["a"] * 20
    texts[5] = "one two three four five six seven eight nine ten"
    with pytest.raises(BackendRejected) as info:
        await backend.embed(_embedding("e-bad", texts), Deadline.after(60))
    assert info.value.param == "input[5]"
    await wait_until(lambda: sim.state.embeds_running == 0)
    counters = sim.state.counters
    assert counters.embeds_cancelled == counters.embed_calls > 0  # none ran to its end


@pytest.mark.parametrize(
    ("inputs", "param"),
    [
        ([[1, 2], [3], [99_999_999]], "input[2]"),
        ([99_999_999], "input"),
        (["fine", "word " * 5000], "input[1]"),
    ],
)
async def test_an_input_the_model_cannot_take_is_named_before_any_is_sent(
    sim: SimServer, backend: VllmGrpcBackend, inputs: Any, param: str
) -> None:
    """A token id outside the vocabulary, or an input longer than the context, is a 400
    naming that input; the engine hears of none of them."""
    with pytest.raises(InvalidRequest) as info:
        await backend.embed(_embedding("e-oov", inputs), Deadline.after(30))
    assert info.value.param == param
    assert sim.state.counters.embed_calls == 0


class _CompleteOnly:
    """A stub whose `Generate` asks the engine not to stream: every choice comes whole in
    its `complete`, with no chunk before it."""

    def __init__(self, stub: Any) -> None:
        self._stub = stub

    def Generate(self, message: Any, **kwargs: Any) -> Any:
        message.stream = False
        return self._stub.Generate(message, **kwargs)


async def test_a_stream_whose_first_message_is_a_complete_keeps_its_prompt_and_tokens(
    backend: VllmGrpcBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stream that gets only `complete` messages (no chunk before them) tells its prompt and
    has the usage and text of the same request answered whole."""
    fields: dict[str, Any] = {"n": 2, "seed": 5, "max_tokens": 6}
    whole = await backend.complete(_completion("whole", **fields), Deadline.after(30))
    stub = backend._stub
    monkeypatch.setattr(backend, "_stub", lambda: _CompleteOnly(stub()))
    texts: dict[int, str] = {0: "", 1: ""}
    told = 0
    usage = None
    async for chunk in backend.stream(
        _completion("only", stream=True, **fields), Deadline.after(30)
    ):
        told += chunk.prompt_tokens
        for delta in chunk.deltas:
            texts[delta.index] += delta.text
        usage = chunk.usage or usage
    assert usage is not None and whole.usage.prompt_tokens > 0
    assert (usage.prompt_tokens, told) == (whole.usage.prompt_tokens,) * 2
    assert usage.completion_tokens == whole.usage.completion_tokens
    assert [texts[0], texts[1]] == [c.text for c in whole.choices]


async def test_large_prompts_are_tokenized_a_few_at_a_time(
    backend: VllmGrpcBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A burst of near-limit prompts is tokenized at most two at a time (each can take
    hundreds of MB while it is), the rest waiting their turn; small prompts never wait."""
    release = threading.Event()
    running, most = 0, 0
    lock = threading.Lock()

    def holding_prepare(*args: Any) -> Any:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        release.wait(timeout=60)
        with lock:
            running -= 1
        return prepare(*args)

    monkeypatch.setattr("backends.vllm_grpc.client.prepare", holding_prepare)
    long_text = "word " * 8_000
    messages = [{"role": "user", "content": long_text}]
    large = [
        asyncio.ensure_future(backend.prompt_ids(_request(f"large-{i}", messages=messages)))
        for i in range(4)
    ]
    await wait_until(lambda: running == 2)
    for _ in range(50):  # the others had every chance to start: they wait on the bound
        await asyncio.sleep(0)
    assert running == 2
    release.set()
    answers = await asyncio.gather(*large, return_exceptions=True)
    assert all(isinstance(a, ContextLengthExceeded) for a in answers)  # tokenized, then too long
    assert most == 2


async def test_a_prompt_prepared_for_another_replica_is_prepared_again_where_it_differs(
    tmp_path: Path,
) -> None:
    """A prompt tokenized on one replica to route it (`prompt_ids`) is checked again by a
    replica of a smaller context: a 400 there, not a prompt too long sent to its engine."""
    large, small = SimServer(SimConfig(port=0)), SimServer(SimConfig(port=0, max_context_length=64))
    await large.start()
    await small.start()
    clients = [
        VllmGrpcBackend(
            f"grpc://{server.address}", model="sim", channels=1, tokenizer_dir=None,
            tokenizer_cache_dir=tmp_path,
        )
        for server in (large, small)
    ]  # fmt: skip
    try:
        for client in clients:
            await client.start()
        request = _request("long", messages=[{"role": "user", "content": "word " * 200}])
        assert len(await clients[0].prompt_ids(request)) > 64
        with pytest.raises(ContextLengthExceeded):
            await clients[1].complete(request, Deadline.after(30))
        assert small.state.counters.generate_calls == 0
    finally:
        for client in clients:
            await client.aclose()
        await large.stop(grace=0)
        await small.stop(grace=0)
