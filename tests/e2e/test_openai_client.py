"""The official `openai` client, sync and async, through a real gateway process."""

from __future__ import annotations

from typing import Any

import openai
import pytest
from openai.types.chat import ChatCompletionMessageParam

from backends.vllm_grpc.chat_template import render_chat_request
from backends.vllm_grpc.tokenizer_store import load_tokenizer_bundle
from core.protocol import MAX_EMBEDDING_INPUTS, ChatCompletionRequest
from standin.vllm.sampling import SamplingSpec
from standin.vllm.served_model import expected_generation
from standin.vllm.tokenizer_files import tokenizer_dir
from tests.e2e.stack import Stack

MESSAGES: list[ChatCompletionMessageParam] = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "Say something with emoji 🙂 and 你好"},
]
MODELS = ["sim", "mock"]


def _expected_chat_text(seed: int, max_tokens: int | None = None) -> str:
    """What the stand-in answers for MESSAGES, computed from its own generator."""
    bundle = load_tokenizer_bundle(tokenizer_dir())
    body = ChatCompletionRequest.model_validate({"model": "sim", "messages": list(MESSAGES)})
    prompt_ids = bundle.encode(render_chat_request(bundle, body), add_special_tokens=False)
    return expected_generation(prompt_ids, SamplingSpec(seed=seed, max_tokens=max_tokens)).text


@pytest.mark.parametrize("model", MODELS)
def test_sync_chat(stack: Stack, model: str) -> None:
    """A sync non-streaming chat completion has content, usage and OpenAI metadata."""
    client = openai.OpenAI(base_url=stack.api_url, api_key="k")
    answer = client.chat.completions.create(model=model, messages=MESSAGES, seed=1)
    assert answer.choices[0].message.content
    assert answer.choices[0].finish_reason == "stop"
    assert answer.model == model and answer.id and answer.created and answer.system_fingerprint
    assert answer.usage is not None and answer.usage.completion_tokens > 0


@pytest.mark.parametrize("model", MODELS)
async def test_async_stream_matches_non_stream(stack: Stack, model: str) -> None:
    """A streamed answer assembles to exactly the non-streamed one, with usage last."""
    client = openai.AsyncOpenAI(base_url=stack.api_url, api_key="k")
    whole = await client.chat.completions.create(model=model, messages=MESSAGES, seed=7)
    stream = await client.chat.completions.create(
        model=model,
        messages=MESSAGES,
        seed=7,
        stream=True,
        stream_options={"include_usage": True},
    )
    text, finish, usage = "", None, None
    async for chunk in stream:
        if chunk.usage is not None:
            usage = chunk.usage
        for choice in chunk.choices:
            text += choice.delta.content or ""
            finish = choice.finish_reason or finish
    assert text == whole.choices[0].message.content
    assert finish == whole.choices[0].finish_reason
    assert usage is not None and whole.usage is not None
    assert usage.completion_tokens == whole.usage.completion_tokens


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
async def test_utf8_stream_is_exact(stack: Stack, seed: int) -> None:
    """Streamed text equals the stand-in's own output: multi-byte characters split across
    tokens arrive whole."""
    client = openai.AsyncOpenAI(base_url=stack.api_url, api_key="k")
    stream = await client.chat.completions.create(
        model="sim",
        messages=MESSAGES,
        seed=seed,
        stream=True,
    )
    pieces = [c.choices[0].delta.content or "" async for c in stream if c.choices]
    expected = _expected_chat_text(seed)
    assert "".join(pieces) == expected
    assert any(ord(ch) > 0xFFFF for ch in expected) or any(ord(ch) > 0x2E80 for ch in expected)
    assert all("\ufffd" not in piece for piece in pieces)


def test_max_tokens_gives_length(stack: Stack) -> None:
    """max_tokens cuts the answer with finish_reason length, matching the stand-in."""
    client = openai.OpenAI(base_url=stack.api_url, api_key="k")
    answer = client.chat.completions.create(model="sim", messages=MESSAGES, seed=5, max_tokens=4)
    assert answer.choices[0].finish_reason == "length"
    assert answer.usage is not None and answer.usage.completion_tokens == 4
    assert answer.choices[0].message.content == _expected_chat_text(5, max_tokens=4)


@pytest.mark.parametrize("stream", [False, True])
def test_a_text_completion_without_max_tokens_stops_at_16(stack: Stack, stream: bool) -> None:
    """OpenAI's and vLLM's default: 16 tokens, finish_reason length, not the whole context."""
    client = openai.OpenAI(base_url=stack.api_url, api_key="k")
    extra = {"ignore_eos": True}
    if stream:
        chunks = list(
            client.completions.create(
                model="sim",
                prompt="a",
                stream=True,
                stream_options={"include_usage": True},
                extra_body=extra,
            )
        )
        finish = [c.choices[0].finish_reason for c in chunks if c.choices]
        usage = chunks[-1].usage
        assert finish[-1] == "length"
    else:
        answer = client.completions.create(model="sim", prompt="a", extra_body=extra)
        usage = answer.usage
        assert answer.choices[0].finish_reason == "length"
    assert usage is not None and usage.completion_tokens == 16


@pytest.mark.parametrize("model", MODELS)
async def test_n_choices_stream_by_index(stack: Stack, model: str) -> None:
    """With n=2 each choice streams under its own index and both finish."""
    client = openai.AsyncOpenAI(base_url=stack.api_url, api_key="k")
    stream = await client.chat.completions.create(
        model=model,
        messages=MESSAGES,
        n=2,
        seed=3,
        stream=True,
    )
    texts: dict[int, str] = {}
    finished: set[int] = set()
    async for chunk in stream:
        for choice in chunk.choices:
            texts[choice.index] = texts.get(choice.index, "") + (choice.delta.content or "")
            if choice.finish_reason:
                finished.add(choice.index)
    assert finished == {0, 1} and all(texts.values())


@pytest.mark.parametrize("model", MODELS)
def test_text_completion_stream_and_not(stack: Stack, model: str) -> None:
    """Text completions work streamed and not, and agree."""
    client = openai.OpenAI(base_url=stack.api_url, api_key="k")
    whole = client.completions.create(model=model, prompt="Once upon a time", seed=2)
    streamed = "".join(
        c.choices[0].text
        for c in client.completions.create(
            model=model, prompt="Once upon a time", seed=2, stream=True
        )
        if c.choices
    )
    assert whole.choices[0].text and streamed == whole.choices[0].text


BATCHES: list[list[str] | list[list[int]]] = [
    ["Once upon a time", "In a galaxy far away", "It was a dark night"],
    [[300, 301, 302], [400, 401]],
]


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("prompts", BATCHES, ids=["texts", "token-lists"])
async def test_a_batch_of_prompts_is_answered_as_each_prompt_alone(
    stack: Stack, model: str, prompts: list[str] | list[list[int]]
) -> None:
    """A list of prompts is answered as OpenAI and vLLM answer it: n choices for each, choice
    `i * n + j` being what prompt i alone gets as its choice j, usage summed; streamed, each
    chunk's choice carries that index, every choice finishes and the usage comes once."""
    client = openai.AsyncOpenAI(base_url=stack.api_url, api_key="k", max_retries=0)
    ask: dict[str, Any] = {"model": model, "n": 2, "seed": 4, "max_tokens": 6}
    alone = [await client.completions.create(prompt=p, **ask) for p in prompts]
    expected = [choice.text for answer in alone for choice in answer.choices]
    batch = await client.completions.create(prompt=prompts, **ask)
    assert [(c.index, c.text) for c in batch.choices] == list(enumerate(expected))
    assert all(expected) and batch.usage is not None
    assert batch.usage.prompt_tokens == sum(a.usage.prompt_tokens for a in alone if a.usage)
    assert batch.usage.completion_tokens == sum(a.usage.completion_tokens for a in alone if a.usage)
    stream = await client.completions.create(
        prompt=prompts, stream=True, stream_options={"include_usage": True}, **ask
    )
    texts = [""] * len(expected)
    finished: set[int] = set()
    usages = []
    async for chunk in stream:
        for choice in chunk.choices:
            texts[choice.index] += choice.text
            if choice.finish_reason is not None:
                finished.add(choice.index)
        if chunk.usage is not None:
            usages.append(chunk.usage)
    assert texts == expected and finished == set(range(len(expected)))
    assert [u.total_tokens for u in usages] == [batch.usage.total_tokens]


async def test_a_batch_is_never_answered_from_the_cache(stack: Stack) -> None:
    """A reproducible prompt answered alone is cached; a batch holding it is not answered
    from that entry (nor cached itself): every prompt gets its own choices."""
    client = openai.AsyncOpenAI(base_url=stack.api_url, api_key="k", max_retries=0)
    ask: dict[str, Any] = {"model": "sim", "temperature": 0, "max_tokens": 5}
    alone = await client.completions.with_raw_response.create(prompt="Cache me", **ask)
    again = await client.completions.with_raw_response.create(prompt="Cache me", **ask)
    assert again.headers["x-cache"].startswith("hit")
    prompts = ["Cache me", "Not me"]
    for _ in range(2):
        raw = await client.completions.with_raw_response.create(prompt=prompts, **ask)
        batch = raw.parse()
        assert not raw.headers["x-cache"].startswith("hit")
        assert [c.index for c in batch.choices] == [0, 1]
        assert batch.choices[0].text == alone.parse().choices[0].text


@pytest.mark.parametrize("stream", [False, True])
def test_an_echoed_prompt_comes_with_its_logprobs(stack: Stack, stream: bool) -> None:
    """`echo` with `logprobs` over gRPC: the prompt's tokens lead the logprobs (the first with
    none, as at OpenAI), their offsets point into the text, and the answer's follow."""
    client = openai.OpenAI(base_url=stack.api_url, api_key="k")
    prompt = "Once upon a café"
    if stream:
        chunks = client.completions.create(
            model="sim", prompt=prompt, echo=True, logprobs=2, max_tokens=3, stream=True
        )
        parts = [c.choices[0] for c in chunks]
        text = "".join(part.text for part in parts)
        tokens = [t for part in parts if part.logprobs for t in part.logprobs.tokens or []]
        values = [v for part in parts if part.logprobs for v in part.logprobs.token_logprobs or []]
        offsets = [o for part in parts if part.logprobs for o in part.logprobs.text_offset or []]
    else:
        choice = client.completions.create(
            model="sim", prompt=prompt, echo=True, logprobs=2, max_tokens=3
        ).choices[0]
        assert choice.logprobs is not None
        text, tokens = choice.text, choice.logprobs.tokens or []
        values, offsets = choice.logprobs.token_logprobs or [], choice.logprobs.text_offset or []
    assert text.startswith(prompt) and len(tokens) == len(values) == len(offsets) > 3
    assert values[0] is None and all(v is not None for v in values[1:])
    assert offsets[0] == 0 and offsets == sorted(offsets)
    prompt_tokens = len(tokens) - 3
    assert "".join(tokens[:prompt_tokens]) == prompt and offsets[prompt_tokens] == len(prompt)


@pytest.mark.parametrize("stream", [False, True])
def test_a_stop_string_ending_inside_a_token_keeps_its_logprobs(stack: Stack, stream: bool) -> None:
    """A stop string that ends inside a token (its first half shown) still gives logprobs to
    the official client: the tokens up to the one that completed it, as vLLM lists them."""
    bundle = load_tokenizer_bundle(tokenizer_dir())
    body = ChatCompletionRequest.model_validate({"model": "sim", "messages": list(MESSAGES)})
    prompt_ids = bundle.encode(render_chat_request(bundle, body), add_special_tokens=False)
    ids = expected_generation(prompt_ids, SamplingSpec(seed=3, max_tokens=8)).token_ids
    first, second = (bundle.tokenizer.decode(list(ids[:k])) for k in (1, 2))
    stop = first[-1] + second[len(first)]  # ends in the second token's first character
    client = openai.OpenAI(base_url=stack.api_url, api_key="k")
    ask: dict[str, Any] = {"model": "sim", "messages": MESSAGES, "seed": 3, "max_tokens": 8}
    ask.update(stop=[stop], logprobs=True)
    if stream:
        parts = [c.choices[0] for c in client.chat.completions.create(stream=True, **ask)]
        text = "".join(part.delta.content or "" for part in parts)
        content = [t for part in parts if part.logprobs for t in part.logprobs.content or []]
    else:
        choice = client.chat.completions.create(**ask).choices[0]
        assert choice.logprobs is not None and choice.logprobs.content is not None
        text, content = choice.message.content or "", choice.logprobs.content
    assert text == first[:-1]
    assert bytes(b for entry in content for b in entry.bytes or []).decode() == second


def test_an_echo_alone_scores_the_prompt(stack: Stack) -> None:
    """`echo` with `max_tokens=0`: the prompt and its logprobs, nothing generated."""
    client = openai.OpenAI(base_url=stack.api_url, api_key="k")
    answer = client.completions.create(
        model="sim", prompt="Once upon a café", echo=True, logprobs=1, max_tokens=0
    )
    choice = answer.choices[0]
    assert choice.text == "Once upon a café" and choice.finish_reason == "length"
    assert choice.logprobs is not None and "".join(choice.logprobs.tokens or []) == choice.text
    assert answer.usage is not None and answer.usage.completion_tokens == 0


@pytest.mark.parametrize("count", [2, 5])
def test_tokens_of_part_of_a_character_keep_their_own_top_logprobs(
    stack: Stack, count: int
) -> None:
    """Tokens that all decode to U+FFFD are `bytes:\\xNN` keys, as at OpenAI: each position
    has `logprobs` distinct entries, the sampled token's holding its own logprob."""
    client = openai.OpenAI(base_url=stack.api_url, api_key="k")
    choice = client.completions.create(
        model="sim", prompt="hello world", max_tokens=5, seed=2, logprobs=count
    ).choices[0]
    assert choice.logprobs is not None
    tokens, tops = choice.logprobs.tokens or [], choice.logprobs.top_logprobs or []
    assert any(token.startswith("bytes:\\x") for token in tokens)
    for token, value, top in zip(tokens, choice.logprobs.token_logprobs or [], tops, strict=True):
        assert len(top) == count and top[token] == value


def test_stop_string_is_trimmed(stack: Stack) -> None:
    """A stop string ends the answer and never appears in it."""
    client = openai.OpenAI(base_url=stack.api_url, api_key="k")
    full = client.chat.completions.create(model="sim", messages=MESSAGES, seed=9)
    content = full.choices[0].message.content or ""
    stop = content.split(" ")[2]
    cut = client.chat.completions.create(model="sim", messages=MESSAGES, seed=9, stop=[stop])
    assert cut.choices[0].message.content == content[: content.index(stop)]
    assert cut.choices[0].finish_reason == "stop"


@pytest.mark.parametrize("model", MODELS)
def test_embeddings(stack: Stack, model: str) -> None:
    """Embeddings return one vector per input."""
    client = openai.OpenAI(base_url=stack.api_url, api_key="k")
    result = client.embeddings.create(model=model, input=["one", "two words"])
    assert [d.index for d in result.data] == [0, 1]
    assert len(result.data[0].embedding) > 0


def test_embedding_dimensions_over_http_and_grpc(stack: Stack) -> None:
    """`dimensions` reaches the OpenAI-compatible backend, which shortens the vectors; over
    gRPC, whose Embed request cannot carry it, it is a 400 naming it and saying why."""
    client = openai.OpenAI(base_url=stack.api_url, api_key="k", max_retries=0)
    short = client.embeddings.create(model="mock", input=["one", "two"], dimensions=4)
    assert [len(d.embedding) for d in short.data] == [4, 4]
    with pytest.raises(openai.BadRequestError) as info:
        client.embeddings.create(model="sim", input="one", dimensions=4)
    assert (info.value.code, info.value.param) == ("unsupported_parameter", "dimensions")
    assert "gRPC" in info.value.message


def test_a_full_batch_of_embeddings_over_grpc(stack: Stack) -> None:
    """2048 inputs (OpenAI's most), each its own gRPC Embed call, all come back, in order,
    three times running; a chat right after is answered as usual."""
    client = openai.OpenAI(base_url=stack.api_url, api_key="k", max_retries=0)
    texts = [f"text number {i}" for i in range(MAX_EMBEDDING_INPUTS)]
    for _ in range(3):
        result = client.embeddings.create(model="sim", input=texts)
        assert [d.index for d in result.data] == list(range(MAX_EMBEDDING_INPUTS))
    alone = client.embeddings.create(model="sim", input=texts[7])
    assert result.data[7].embedding == alone.data[0].embedding
    answer = client.chat.completions.create(model="sim", messages=MESSAGES, max_tokens=2)
    assert answer.choices[0].message.content


def test_models_list(stack: Stack) -> None:
    """/v1/models lists every configured model."""
    client = openai.OpenAI(base_url=stack.api_url, api_key="k")
    assert sorted(m.id for m in client.models.list().data) == ["mock", "sim"]
