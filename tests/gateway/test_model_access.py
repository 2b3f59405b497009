"""Which model version answers a caller, and which models a key may not even see."""

from __future__ import annotations

import orjson
import pytest

from access.caller import Caller
from backends.fleet import Fleet
from backends.replica import Replica
from backends.routes import parse_routes
from core.errors import ModelNotFound
from core.protocol import ChatCompletionRequest
from core.request_parsing import parse_request
from gateway.model_access import routed, visible_models
from tests.support.fake_backend import FakeBackend


def _fleet() -> Fleet:
    replica = Replica("m", FakeBackend(url="a"), healthy=True)
    return Fleet([replica], retry_attempts=1, health_interval_s=60, health_timeout_s=1)


def _body(model: str) -> ChatCompletionRequest:
    payload = {"model": model, "messages": [{"role": "user", "content": "hi"}]}
    return parse_request(orjson.dumps(payload), ChatCompletionRequest)


def test_a_served_model_the_key_may_use_is_answered_as_asked() -> None:
    """No route: the body comes back as it was."""
    body = _body("m")
    assert routed(body, Caller("t"), _fleet()) is body


def test_a_model_not_served_or_not_allowed_is_not_found() -> None:
    """Both are 404s: a key is never told that a model it may not use exists."""
    fleet = _fleet()
    with pytest.raises(ModelNotFound):
        routed(_body("other"), Caller("t"), fleet)
    with pytest.raises(ModelNotFound):
        routed(_body("m"), Caller("t", models=frozenset({"other"})), fleet)


def _versioned_fleet() -> Fleet:
    names = ("llama-v1", "llama-v2", "qwen")
    replicas = [Replica(name, FakeBackend(url=name), healthy=True) for name in names]
    routes = parse_routes("llama=llama-v1:90,llama-v2:10", names)
    return Fleet(
        replicas, retry_attempts=1, health_interval_s=60, health_timeout_s=1, routes=routes
    )


def test_the_listing_shows_public_names_not_the_versions_behind_them() -> None:
    """A key allowed every model, or the public name, sees `llama`, never its versions."""
    fleet = _versioned_fleet()
    assert visible_models(Caller("t"), fleet) == ["llama", "qwen"]
    assert visible_models(Caller("t", models=frozenset({"llama"})), fleet) == ["llama"]


def test_a_key_limited_to_a_version_lists_that_version() -> None:
    """A key whose models name a version (which it may call) lists it, and only it."""
    caller = Caller("t", models=frozenset({"llama-v2", "gone"}))
    assert visible_models(caller, _versioned_fleet()) == ["llama-v2"]
