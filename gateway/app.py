"""The application factory: everything is built here and held in lifespan state."""

from __future__ import annotations

import asyncio
import contextlib
import difflib
import logging
import os
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.types import ASGIApp
from uvicorn.config import STARTUP_FAILURE

from access.factory import build_rate_limiter
from access.registry import KeyRegistry
from backends.discovery import Resolver
from backends.factory import build_discovery, build_replicas
from backends.fleet import AdmissionConfig, Fleet
from backends.replica import Replica
from backends.replica_urls import ReplicaSpec
from backends.settings import EMBEDDED_MODEL, ModelSpec
from cache.factory import build_cache_layer
from cache.response_store import ResponseStore
from core.env import SettingsError, check_writable_dir
from core.errors import GatewayError
from gateway.answer_stamp import AnswerStamp
from gateway.drain import WRITEBACK_DRAIN_S, DrainSettings, intercept_sigterm
from gateway.error_responses import gateway_error, http_error, unexpected_error
from gateway.hot_routes import HotRoutes
from gateway.metrics_sampler import sample_forever
from gateway.observing import ObservingMiddleware
from gateway.pipeline import Pipeline
from gateway.responses.service import ResponsesService
from gateway.routes import GENERATION_ROUTES, ROUTES
from gateway.settings import Settings
from obs.metrics import GatewayMetrics
from obs.observer import Observer
from obs.tracing import Tracing

if TYPE_CHECKING:
    from standin.vllm.config import SimConfig

log = logging.getLogger("gateway")

_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})


def create_app(
    settings: Settings,
    replicas: Sequence[Replica] | None = None,
    tracing: Tracing | None = None,
    resolver: Resolver | None = None,
    drain: DrainSettings | None = None,
    standin_env: Mapping[str, str] | None = None,
) -> ASGIApp:
    """Build the gateway. Pass `replicas` to serve fake or pre-built backends, `tracing` to
    trace and `resolver` to resolve `+dns` replica sets (tests); `create_app_from_env`
    configures tracing from OTEL_* variables, drains on SIGTERM (`drain`) and tunes the
    embedded stand-in with `GATEWAY_SIM_*` (`standin_env`)."""
    tracer = tracing if tracing is not None else Tracing.disabled()

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[dict[str, Any]]:
        async with contextlib.AsyncExitStack() as stack:
            if drain is not None:
                stack.callback(intercept_sigterm(drain.delay_s))
            effective = settings
            if replicas is None and settings.backends.embedded:
                effective = await _start_embedded_standin(settings, stack, standin_env or {})
            fleet = Fleet(
                replicas if replicas is not None else build_replicas(effective.backends),
                retry_attempts=effective.backends.retry_attempts,
                health_interval_s=effective.backends.health_interval_s,
                health_timeout_s=effective.backends.health_timeout_s,
                health_failures=effective.backends.health_failures,
                admission=AdmissionConfig.from_settings(effective.budgets),
                slow_start_s=effective.backends.slow_start_s,
                outliers=effective.backends.outliers,
                hangs=effective.backends.hangs,
                routes=effective.backends.routes,
                prefix_weight=effective.backends.prefix_routing_weight,
            )
            access = KeyRegistry(effective.access)
            await access.start()
            stack.push_async_callback(access.aclose)
            limiter = build_rate_limiter(effective.access, effective.workers)
            stack.push_async_callback(limiter.aclose)
            _say_who_may_call(effective)
            await fleet.start()
            stack.push_async_callback(fleet.aclose)
            discovery = (
                None
                if replicas is not None
                else build_discovery(effective.backends, fleet, resolver)
            )
            if discovery is not None:
                await discovery.start()
                stack.push_async_callback(discovery.aclose)
            cache = await build_cache_layer(effective.cache)
            stack.push_async_callback(cache.aclose, WRITEBACK_DRAIN_S)
            pipeline = Pipeline(effective, fleet, cache, tracer, limiter)
            responses = ResponsesService(pipeline, ResponseStore.from_settings(effective.cache))
            stack.push_async_callback(responses.aclose, WRITEBACK_DRAIN_S)
            stack.push_async_callback(asyncio.to_thread, tracer.shutdown)
            metrics = GatewayMetrics(models=[*fleet.models, *fleet.routes.routes])
            threshold = effective.cache.semantic_threshold if cache.semantic else None
            observer = Observer(metrics, tracer, threshold)
            stack.callback(observer.close)
            sampler = asyncio.create_task(sample_forever(metrics, fleet, cache, limiter, discovery))
            stack.callback(sampler.cancel)
            log.info("serving models: %s", ", ".join(fleet.models))
            for route in fleet.routes.routes.values():
                split = ", ".join(f"{v.model}:{v.weight:g}" for v in route.versions)
                log.info("model %s is served by versions %s", route.name, split)
            yield {
                "access": access,
                "fleet": fleet,
                "cache": cache,
                "observer": observer,
                "pipeline": pipeline,
                "responses": responses,
                "max_body_bytes": effective.max_body_bytes,
            }

    app = Starlette(
        routes=ROUTES,
        middleware=[Middleware(AnswerStamp)],
        lifespan=lifespan,
        exception_handlers={
            GatewayError: gateway_error,
            HTTPException: http_error,
            Exception: unexpected_error,
        },
    )
    # A path with a slash too many is a 404, not a redirect: Starlette's Location is built from
    # the client's Host header, with the scheme of this hop (http behind a TLS proxy).
    app.router.redirect_slashes = False
    return ObservingMiddleware(HotRoutes(app, GENERATION_ROUTES))


def create_app_from_env() -> ASGIApp:
    """Factory for `uvicorn --factory`: settings come from the environment. `gateway serve`
    validated the same variables before starting this worker; one still invalid here (a file
    changed in between, or a worker started by other means) exits as a failed startup, which
    stops the supervisor instead of a traceback and a worker restarted forever."""
    try:
        settings = Settings.from_env()
        tracing = Tracing.from_env(os.environ)
        drain = DrainSettings.from_env(os.environ)
    except SettingsError as exc:
        log.critical("invalid configuration: %s", exc)
        sys.exit(STARTUP_FAILURE)
    return create_app(settings, tracing=tracing, drain=drain, standin_env=os.environ)


def _say_who_may_call(settings: Settings) -> None:
    if settings.access.enabled:
        log.info("access control on: API keys from the key set")
    elif settings.host not in _LOOPBACK:
        log.warning(
            "access control is off and the gateway listens on %s: anyone who can reach it may "
            "use every model without limit (set GATEWAY_API_KEYS_FILE or GATEWAY_API_KEYS)",
            settings.host,
        )


def check_embedded_standin(env: Mapping[str, str]) -> None:
    """GATEWAY_BACKENDS=embedded: the stand-in's own variables that would stop it in each
    worker (its tokenizer's cache directory, its `GATEWAY_SIM_*` knobs) are a SettingsError
    here, at startup."""
    from standin.vllm.tokenizer_files import CACHE_DIR_VARIABLE, default_cache_root

    check_writable_dir(CACHE_DIR_VARIABLE, default_cache_root(env))
    embedded_standin_config(env)


_SET_BY_THE_GATEWAY = {
    "HOST": "it listens on loopback",
    "PORT": "each worker's stand-in listens on a free port",
    "MODEL": f"the embedded demo serves model {EMBEDDED_MODEL!r}",
    "SHUTDOWN_GRACE_S": "the gateway's own shutdown (GATEWAY_SHUTDOWN_GRACE_S) ends it",
}


def embedded_standin_config(env: Mapping[str, str]) -> SimConfig:
    """The embedded stand-in's knobs from `GATEWAY_SIM_*`, as `python -m standin.vllm` reads
    them (`GATEWAY_SIM_ITL_MS=50`), except those the gateway sets; one of those, a name the
    stand-in has no knob for, or a bad value is a SettingsError naming the variable."""
    from standin.vllm.config import ENV_PREFIX, SimConfig, field_types

    knobs = field_types()
    config = SimConfig(host="127.0.0.1", port=0, model=EMBEDDED_MODEL)
    for name in sorted(env):
        knob = name.removeprefix(ENV_PREFIX)
        if knob == name or knob == "CACHE_DIR":  # CACHE_DIR: read where the tokenizer is built
            continue
        if knob in _SET_BY_THE_GATEWAY:
            raise SettingsError(
                f"{name} cannot be set for the embedded stand-in: {_SET_BY_THE_GATEWAY[knob]}"
            )
        if knob.lower() not in knobs:
            close = difflib.get_close_matches(knob.lower(), knobs, n=1, cutoff=0.6)
            hint = f" (did you mean {ENV_PREFIX}{close[0].upper()}?)" if close else ""
            raise SettingsError(f"{name} is no setting of the vLLM stand-in{hint}")
        try:
            config = config.updated({knob.lower(): env[name]})
        except ValueError as exc:
            raise SettingsError(f"{name}: {exc}") from None
    return config


async def _start_embedded_standin(
    settings: Settings, stack: contextlib.AsyncExitStack, env: Mapping[str, str]
) -> Settings:
    """GATEWAY_BACKENDS=embedded: the demo's engine, the vLLM stand-in, over real gRPC, tuned
    by `GATEWAY_SIM_*` in `env`."""
    from standin.vllm.server import SimServer

    standin = SimServer(embedded_standin_config(env))
    port = await standin.start()
    stack.push_async_callback(standin.stop)
    log.warning(
        "GATEWAY_BACKENDS=embedded: serving model %r from the built-in vLLM stand-in "
        "on 127.0.0.1:%d (a demo, not a real model)",
        EMBEDDED_MODEL,
        port,
    )
    model = ModelSpec(EMBEDDED_MODEL, (ReplicaSpec(f"grpc://127.0.0.1:{port}"),))
    return replace(settings, backends=replace(settings.backends, models=(model,)))
