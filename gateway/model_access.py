"""Which model version answers a caller: the route a request's model takes
(`GATEWAY_MODEL_ROUTES`), and the models the caller's key may use."""

from __future__ import annotations

from typing import TypeVar, cast

from access.caller import Caller
from backends.fleet import Fleet
from core.errors import ModelNotFound
from core.protocol import ChatCompletionRequest, CompletionRequest, EmbeddingRequest

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
