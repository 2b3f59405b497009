"""The generation routes, taken around Starlette's router and middleware stack.

The profile of a streamed answer put about a twentieth of the gateway's CPU in Starlette: the
router, two exception middlewares and a wrapper around every `send` of every chunk. The
generation endpoints need none of it: they are matched here by path and method, and their
errors are answered through the same `error_responses` functions Starlette's handlers use.
Every other request (other routes, other methods, lifespan) goes to the Starlette app.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping

from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from core.errors import GatewayError
from gateway.client_watch import CLIENT_WATCH_SCOPE_KEY, ClientWatch
from gateway.drain import DRAIN, ShuttingDown
from gateway.error_responses import error_response
from gateway.observing import RECORD_SCOPE_KEY
from obs.request_record import RequestRecord

log = logging.getLogger("gateway")

Endpoint = Callable[[Request], Awaitable[Response]]


class HotRoutes:
    """POSTs to the paths in `routes` go straight to their endpoints; the rest to `app`."""

    def __init__(self, app: ASGIApp, routes: Mapping[str, Endpoint]) -> None:
        self._app = app
        self._routes = dict(routes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        endpoint = self._routes.get(scope["path"]) if scope["type"] == "http" else None
        if endpoint is None or scope["method"] != "POST":
            await self._app(scope, receive, send)
            return
        request = Request(scope, receive, send)
        task = asyncio.current_task()
        assert task is not None
        # Started once the body is read (`read_json_body`), stopped when the answer is written:
        # a client that leaves meanwhile cancels this task wherever it waits.
        watch = scope[CLIENT_WATCH_SCOPE_KEY] = ClientWatch(receive, task)
        answering = False
        try:
            try:
                response = await endpoint(request)
            except GatewayError as exc:
                response = error_response(exc, request)
            except ClientDisconnect:  # left while its body was being read
                _note_client_left(scope)
                return
            except Exception as exc:
                log.exception("unhandled error on %s", scope["path"], exc_info=exc)
                response = error_response(GatewayError("The gateway failed unexpectedly."), request)
            answering = True
            await response(scope, receive, send)
        except asyncio.CancelledError:
            watch.stop()
            if watch.left():
                _note_client_left(scope)
            elif DRAIN.draining and not answering:
                # The shutdown grace ran out before an answer: an error the client can read and
                # retry elsewhere, not the server's bare 500 (a stream ends on its own).
                task.uncancel()
                stopped = ShuttingDown("The gateway shut down before the answer was ready.")
                await error_response(stopped, request)(scope, receive, send)
            else:
                raise
        finally:
            watch.stop()


def _note_client_left(scope: Scope) -> None:
    """The client left before its answer was written: nothing is sent; the record says 499
    (nginx's "client closed request")."""
    record: RequestRecord | None = scope.get(RECORD_SCOPE_KEY)
    if record is not None and record.error is None:
        record.note_failure("client_closed_request", status=499)
