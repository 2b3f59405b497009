"""Which model version answers a caller, and which models a key may not even see."""

from __future__ import annotations

import orjson
import pytest

from access.caller import Caller
from backends.fleet import Fleet
from backends.replica import Replica
from core.errors import ModelNotFound
from core.protocol import ChatCompletionRequest
from core.request_parsing import parse_request
from gateway.model_access import routed
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
