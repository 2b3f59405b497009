"""An OpenAI-compatible upstream whose every answer a test scripts, and a gateway in front of
it, both served on loopback inside the test's event loop."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping

from aiohttp import web

from backends.factory import build_backend
from backends.replica import Replica
from gateway.app import create_app
from gateway.settings import Settings
from tests.support.asgi_server import serving

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@contextlib.asynccontextmanager
async def upstream(routes: Mapping[str, Handler]) -> AsyncIterator[str]:
    """Serve `routes` (paths such as `/v1/embeddings`) and a passing `/health`; yields the
    `/v1` base URL."""
    app = web.Application()
    for path, handler in {"/health": _healthy, **routes}.items():
        app.router.add_route("*", path, handler)
    runner = web.AppRunner(app)
    await runner.setup()
    try:
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        yield f"http://127.0.0.1:{runner.addresses[0][1]}/v1"
    finally:
        await runner.cleanup()


@contextlib.asynccontextmanager
async def gateway_over(
    routes: Mapping[str, Handler], settings: Settings | None = None, model: str = "m"
) -> AsyncIterator[tuple[str, str]]:
    """A gateway serving `model` from one upstream answering `routes`, its backend built as
    `settings` say; yields the gateway's `/v1` base URL and the upstream's (the replica's URL
    in logs)."""
    settings = settings or Settings()
    async with upstream(routes) as url:
        backend = build_backend(model, url, settings.backends)
        replica = Replica(model, backend, healthy=True)
        async with serving(create_app(settings, [replica])) as base:
            yield f"{base}/v1", url


async def _healthy(request: web.Request) -> web.StreamResponse:
    return web.Response(text="ok")


def json_answer(
    body: object, status: int = 200, headers: Mapping[str, str] | None = None
) -> Handler:
    """A handler that answers every request with `body` as JSON."""

    async def answer(request: web.Request) -> web.StreamResponse:
        await request.read()
        return web.json_response(body, status=status, headers=headers)

    return answer
