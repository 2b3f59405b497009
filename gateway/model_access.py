"""Which model version answers a caller: the route a request's model takes
(`GATEWAY_MODEL_ROUTES`), and the models the caller's key may use; an upstream that does not
serve the version, told as the client asked."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import TypeVar, cast

import orjson

from access.caller import Caller
from backends.fleet import Fleet
from core.backend_errors import UpstreamModelNotFound
from core.errors import ModelNotFound
from core.protocol import ChatCompletionRequest, CompletionRequest, EmbeddingRequest

log = logging.getLogger("gateway.model_access")

Body = TypeVar("Body", bound=ChatCompletionRequest | CompletionRequest | EmbeddingRequest)


def routed(body: Body, caller: Caller, fleet: Fleet) -> Body:
    """The body as the version that serves this caller names it (`GATEWAY_MODEL_ROUTES`;
    the cache key, metrics and spans follow it). 404 for a model not served here, and
    likewise for one the caller's key may not use (a key allowed a public name may use its
    versions): a key is never told that a model it may not use exists."""
    model, routes = body.model, fleet.routes
    version = routes.resolve(model, caller.tenant, body.user)
    fleet.replicas(version)
    if not caller.may_use(model) and not any(map(caller.may_use, routes.parents(model))):
        raise ModelNotFound(model)
    if version == model:
        return body
    return cast(Body, body.model_copy(update={"model": version}))  # mypy: Self of a union


def visible_models(caller: Caller, fleet: Fleet) -> list[str]:
    """The models `GET /v1/models` shows this caller: the public names it may use (never the
    versions behind them, so clients do not pin themselves to a canary), and the versions its
    key names itself (a key limited to a version may list and retrieve what it may call)."""
    public = fleet.public_models
    visible = [name for name in public if caller.may_use(name)]
    if caller.models is not None:
        shown = set(public)
        visible += [m for m in fleet.models if m in caller.models and m not in shown]
    return visible


def with_model(raw: bytes, model: str) -> bytes:
    """The client's JSON body naming `model`: what a pass-through backend is sent once a
    route chose the version (it forwards the body as it is when it names the model it serves)."""
    data = orjson.loads(raw)
    data["model"] = model
    return orjson.dumps(data)


@contextlib.contextmanager
def as_asked(model: str) -> Iterator[None]:
    """An upstream that does not serve the model it was sent (`UpstreamModelNotFound`) as the
    client sees it: a 404 `model_not_found` naming `model`, the name the client asked for,
    never the version or the upstream's own name (that goes to the log)."""
    try:
        yield
    except UpstreamModelNotFound as exc:
        log.warning("an upstream does not serve %r: %s", model, exc.message)
        raise ModelNotFound(model) from exc
