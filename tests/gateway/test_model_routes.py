"""Model versions through the gateway: the answer, cache key, metrics and spans name the
version that served; access and /v1/models go by the public name."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson
import pytest

from access.caller import key_digest
from access.key_set import key_set_entry, parse_key_set
from access.settings import AccessSettings
from backends.replica import Replica
from backends.routes import parse_routes
from backends.settings import BackendSettings
from core.backend_errors import UpstreamModelNotFound
from gateway.app import create_app
from gateway.settings import Settings
from tests.gateway.test_observability import SpanWatch, memory_tracing
from tests.support.asgi_server import serving
from tests.support.fake_backend import FakeBackend

VERSIONS = ("llama-v1", "llama-v2")
KEYS = {
    "sk-llama": key_set_entry(key_digest("sk-llama"), "acme", models=["llama"]),
    "sk-emb": key_set_entry(key_digest("sk-emb"), "acme", models=["emb"]),
}


@dataclass
class Gateway:
    """A gateway serving `llama` from two versions (50/50) and `emb` unrouted."""

    url: str
    backends: dict[str, FakeBackend]
    spans: SpanWatch

    async def chat(
        self, key: str = "sk-llama", model: str = "llama", **extra: Any
    ) -> tuple[int, dict[str, str], Any]:
        body = {"model": model, "messages": [{"role": "user", "content": "hi"}], **extra}
        headers = {"authorization": f"Bearer {key}", "content-type": "application/json"}
        async with (
            aiohttp.ClientSession() as session,
            session.post(
                f"{self.url}/v1/chat/completions", data=orjson.dumps(body), headers=headers
            ) as r,
        ):
            headers = {name.lower(): value for name, value in r.headers.items()}
            return r.status, headers, orjson.loads(await r.read())

    async def get(self, path: str, key: str = "sk-llama") -> str:
        headers = {"authorization": f"Bearer {key}"}
        async with (
            aiohttp.ClientSession() as session,
            session.get(f"{self.url}{path}", headers=headers) as r,
        ):
            return await r.text()


@pytest.fixture
async def gw() -> AsyncIterator[Gateway]:
    backends = {name: FakeBackend(url=f"fake://{name}") for name in (*VERSIONS, "emb")}
    routes = parse_routes("llama=llama-v1:50,llama-v2:50", list(backends))
    access = AccessSettings(inline_keys=parse_key_set(f"[{','.join(KEYS.values())}]", "keys"))
    settings = Settings(access=access, backends=BackendSettings(routes=routes))
    tracing, spans = memory_tracing()
    replicas = [Replica(name, backend) for name, backend in backends.items()]
    async with serving(create_app(settings, replicas, tracing)) as url:
        yield Gateway(url, backends, spans)


def _version_of(user: str) -> str:
    return parse_routes("llama=llama-v1:50,llama-v2:50", VERSIONS).resolve("llama", "acme", user)


async def test_answer_names_the_version_that_served(gw: Gateway) -> None:
    """The response's `model` is the version, and that version's replica answered."""
    for user in ("ann", "bob", "cy", "dee", "eve", "fay"):
        status, _, body = await gw.chat(user=user)
        assert status == 200 and body["model"] == _version_of(user)
    assert gw.backends["llama-v1"].calls + gw.backends["llama-v2"].calls == 6
    assert gw.backends["llama-v1"].calls and gw.backends["llama-v2"].calls


async def test_a_response_names_the_version_that_served(gw: Gateway) -> None:
    """The Responses API's `model` is the version too, chosen by the same user stickiness."""
    headers = {"authorization": "Bearer sk-llama", "content-type": "application/json"}
    for user in ("ann", "bob", "cy"):
        body = {"model": "llama", "input": "hi", "user": user}
        async with (
            aiohttp.ClientSession() as session,
            session.post(f"{gw.url}/v1/responses", data=orjson.dumps(body), headers=headers) as r,
        ):
            assert r.status == 200
            assert orjson.loads(await r.read())["model"] == _version_of(user)


async def test_streamed_chunks_name_the_version(gw: Gateway) -> None:
    """Every chunk of a stream names the version."""
    status, _, _ = await gw.chat(user="ann")
    assert status == 200
    headers = {"authorization": "Bearer sk-llama", "content-type": "application/json"}
    body = {"model": "llama", "messages": [{"role": "user", "content": "yo"}], "stream": True}
    body["user"] = "ann"
    async with (
        aiohttp.ClientSession() as session,
        session.post(
            f"{gw.url}/v1/chat/completions", data=orjson.dumps(body), headers=headers
        ) as r,
    ):
        raw = await r.read()
    events = [e.removeprefix(b"data: ") for e in raw.split(b"\n\n") if e.startswith(b"data: {")]
    assert events and {orjson.loads(e)["model"] for e in events} == {_version_of("ann")}


async def test_a_user_stays_on_one_version(gw: Gateway) -> None:
    """Repeated requests of one user go to one version."""
    models = {(await gw.chat(user="ann", max_tokens=i + 1))[2]["model"] for i in range(5)}
    assert models == {_version_of("ann")}


async def test_cache_key_and_spans_name_the_version(gw: Gateway) -> None:
    """Users on different versions never share a cached answer; the backend span names it."""
    on_v1 = next(u for u in (f"u{i}" for i in range(100)) if _version_of(u) == "llama-v1")
    on_v2 = next(u for u in (f"u{i}" for i in range(100)) if _version_of(u) == "llama-v2")
    _, first, _ = await gw.chat(user=on_v1, temperature=0)
    await gw.spans.writebacks(first["x-request-id"], 1)
    _, other, body = await gw.chat(user=on_v2, temperature=0)
    assert other["x-cache"] == "miss" and body["model"] == "llama-v2"
    _, again, body = await gw.chat(user=on_v1, temperature=0)
    assert again["x-cache"] == "hit-exact" and body["model"] == "llama-v1"
    tree = await gw.spans.tree(other["x-request-id"])
    assert "chat llama-v2" in [span.name for span in tree.spans]
    assert tree.root.attributes is not None
    assert tree.root.attributes["gen_ai.request.model"] == "llama-v2"


async def test_metrics_are_labelled_with_the_version(gw: Gateway) -> None:
    """Request metrics carry the version, not `other`."""
    await gw.chat(user="ann")
    text = await gw.get("/metrics")
    assert f'model="{_version_of("ann")}"' in text


async def test_models_lists_public_names(gw: Gateway) -> None:
    """/v1/models lists the public name, not the versions behind it, per the caller's key."""
    listed = orjson.loads(await gw.get("/v1/models"))
    assert [m["id"] for m in listed["data"]] == ["llama"]
    listed = orjson.loads(await gw.get("/v1/models", key="sk-emb"))
    assert [m["id"] for m in listed["data"]] == ["emb"]


async def test_a_model_is_retrieved_by_a_caller_who_may_use_it(gw: Gateway) -> None:
    """/v1/models/{id} answers for a listed model; one the key may not use, or a version
    behind a public name, is as absent as an unknown one."""
    assert orjson.loads(await gw.get("/v1/models/llama"))["id"] == "llama"
    for key, model in (("sk-emb", "llama"), ("sk-llama", "llama-v1"), ("sk-llama", "nope")):
        error = orjson.loads(await gw.get(f"/v1/models/{model}", key=key))
        assert error["error"]["code"] == "model_not_found"


async def test_access_goes_by_the_public_name(gw: Gateway) -> None:
    """A key allowed `llama` may name a version; a key not allowed it gets 404 for both."""
    status, _, body = await gw.chat(model="llama-v2")
    assert status == 200 and body["model"] == "llama-v2"
    for model in ("llama", "llama-v1"):
        status, _, body = await gw.chat(key="sk-emb", model=model)
        assert status == 404 and body["error"]["code"] == "model_not_found"


async def test_a_routed_body_names_the_version(gw: Gateway) -> None:
    """The body a backend is sent (what an HTTP backend forwards) names the version that
    serves, not the public name the client asked for."""
    status, _, body = await gw.chat(user="ann")
    assert status == 200
    sent = gw.backends[body["model"]].raws[-1]
    assert orjson.loads(sent)["model"] == body["model"]


@pytest.mark.parametrize("stream", [False, True])
async def test_an_upstream_model_not_found_names_the_asked_model(gw: Gateway, stream: bool) -> None:
    """A version's upstream that says it does not serve the model is a 404 model_not_found
    naming the public name the client asked for, not the version or the upstream's words."""
    for version in VERSIONS:
        gw.backends[version].fail_with = UpstreamModelNotFound("The model `x-up` does not exist.")
    status, _, body = await gw.chat(stream=stream)
    assert status == 404
    error = body["error"]
    assert (error["code"], error["param"]) == ("model_not_found", "model")
    assert "'llama'" in error["message"] and "llama-v" not in error["message"]
    assert "x-up" not in error["message"]
