"""The backend for OpenAI-compatible HTTP servers (`vllm serve`, or any `/v1` API).

A pass-through: the client's JSON body goes upstream unchanged and the answer is decoded
into the backend-neutral types. aiohttp is the client because it costs about a fifth of
httpx's CPU per proxied request (see the design notes).
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import AsyncGenerator, Mapping

import aiohttp
import orjson
from yarl import URL

from backends import openai_decode as decode
from backends.base import EmbeddingCall, GenerationRequest
from backends.openai_events import StreamEvents
from backends.outliers import OutlierPolicy
from backends.sse_reader import SSEDecoder, SSEError
from budgets.deadline import Deadline
from core.answers import (
    BackendHealth,
    Completion,
    Embeddings,
    Endpoint,
    StreamChunk,
)
from core.backend_errors import BackendCutOff, BackendError, BackendUnavailable
from core.errors import DeadlineExceeded, GatewayError
from core.protocol import ChatCompletionRequest, CompletionRequest

log = logging.getLogger("gateway.backends.openai_http")

# uvicorn (vLLM's server) drops idle connections after 5 s; reusing one it is closing
# at that moment fails the request, so idle connections are retired first.
_KEEPALIVE_S = 4.0
_PROBE_TEXT = "Hi"
# How long a finished stream's connection may wait for the end of the HTTP body (normally
# in the same read as `[DONE]`) before it is closed instead of returned to the pool.
_BODY_END_GRACE_S = 1.0
_STREAM_OPTIONS = b'"stream_options"'
_ASK_USAGE = b'{"stream_options":{"include_usage":true},'


class OpenAIHTTPBackend:
    """One OpenAI-compatible server at `url` (`http(s)://host:port/v1`) serving `model`.

    Requests whose body names another model are rewritten to name `model`.
    Embeddings requested as base64 are decoded to floats; the renderer re-encodes them.
    An upstream's Retry-After is relayed up to `longest_retry_after_s`, the longest the
    gateway rests a replica that asked for one (`GATEWAY_OUTLIER_MAX_EJECTION_S`).
    """

    def __init__(
        self,
        url: str,
        *,
        model: str,
        max_connections: int = 256,
        api_key: str | None = None,
        longest_retry_after_s: float = OutlierPolicy().max_ejection_s,
    ) -> None:
        self.url = url.rstrip("/")
        self.model = model
        self._max_connections = max_connections
        self._longest_retry_after_s = longest_retry_after_s
        self._headers = {"Content-Type": "application/json", "Accept-Encoding": "identity"}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self._urls: dict[Endpoint, URL] = {
            "chat": URL(f"{self.url}/chat/completions"),
            "completion": URL(f"{self.url}/completions"),
        }
        self._embeddings_url = URL(f"{self.url}/embeddings")
        self._models_url = URL(f"{self.url}/models")
        self._health_url = URL(f"{self.url.removesuffix('/v1')}/health")
        self._probe_models: bool | None = None  # None until we learn whether /health exists
        self._told_no_done = False  # whether the log has heard that it leaves out [DONE]
        self._session: aiohttp.ClientSession | None = None
        self._probe_session: aiohttp.ClientSession | None = None

    async def start(self) -> None:
        if self._session is None:
            self._session = self._new_session(self._max_connections)
            # Probes get their own connections, so a saturated pool does not fail them: one
            # for health, one for a generation probe (which may wait its whole timeout).
            self._probe_session = self._new_session(2)

    def _new_session(self, limit: int) -> aiohttp.ClientSession:
        connector = aiohttp.TCPConnector(
            limit=limit, ttl_dns_cache=10, keepalive_timeout=_KEEPALIVE_S
        )
        return aiohttp.ClientSession(
            connector=connector,
            headers=self._headers,
            cookie_jar=aiohttp.DummyCookieJar(),
            skip_auto_headers=("User-Agent",),
        )

    async def aclose(self) -> None:
        for session in (self._session, self._probe_session):
            if session is not None:
                await session.close()
        self._session = self._probe_session = None

    async def complete(self, request: GenerationRequest, deadline: Deadline) -> Completion:
        body = self._body(request.raw, request.body.model, _unset_max_tokens(request.body))
        response = await self._post(self._urls[request.endpoint], body, request.headers, deadline)
        answer = await self._read(response, deadline)
        try:
            return decode.completion(answer, request.endpoint)
        except GatewayError as exc:
            self._own(exc)
            raise

    async def stream(
        self, request: GenerationRequest, deadline: Deadline
    ) -> AsyncGenerator[StreamChunk, None]:
        asked = request.body
        body = self._body(
            request.raw, asked.model, _unset_max_tokens(asked), ask_usage=not asked.include_usage
        )
        response = await self._post(self._urls[request.endpoint], body, request.headers, deadline)
        if response.content_type == "application/json":  # an error, though the status is 200
            answer = await self._read(response, deadline)
            raise self._own(decode.json_in_place_of_stream(answer))
        decoder = SSEDecoder()
        reader = StreamEvents(request.endpoint, asked.choice_count, asked.include_usage)
        content = response.content
        finished = False
        try:
            while True:
                try:
                    events = decoder.feed(await content.readany())
                except TimeoutError:
                    raise DeadlineExceeded(deadline.stage) from None
                except aiohttp.ClientError as exc:
                    if reader.whole:
                        self._ended_without_done()
                        return
                    raise BackendCutOff(f"stream broke: {exc!r}", replica=self.url) from exc
                except SSEError as exc:
                    raise BackendError(f"malformed stream: {exc}", replica=self.url) from exc
                if not events and content.at_eof():
                    if not reader.whole:
                        raise BackendCutOff("stream ended before [DONE]", replica=self.url)
                    self._ended_without_done()
                    finished = True
                    return
                chunk, failure, finished = reader.read(events)
                if chunk is not None:
                    yield chunk
                if failure is not None:
                    raise self._own(failure)
                if finished:
                    return
        finally:
            if finished:
                _release_at_body_end(response)
            else:  # closing (not releasing) the connection tells the server we left
                response.close()

    async def embed(self, request: EmbeddingCall, deadline: Deadline) -> Embeddings:
        body = self._body(request.raw, request.body.model)
        response = await self._post(self._embeddings_url, body, request.headers, deadline)
        answer = await self._read(response, deadline)
        try:
            return decode.embeddings(answer, len(request.body.inputs), request.body.dimensions)
        except GatewayError as exc:
            self._own(exc)
            raise

    async def health(self, timeout: float) -> BackendHealth:
        """`GET /health` (vLLM) on the server root, or `GET /v1/models` where that is 404."""
        session = self._probe_session
        if session is None:
            return BackendHealth(False, "not started")
        try:
            async with asyncio.timeout(timeout):
                if not self._probe_models:
                    async with session.get(self._health_url) as response:
                        status = response.status
                        await response.read()
                    if status == 200:
                        self._probe_models = False
                        return BackendHealth(True, "ok")
                    if status != 404 or self._probe_models is False:
                        return BackendHealth(False, f"GET /health answered HTTP {status}")
                    self._probe_models = True
                return await self._models_health(session)
        except TimeoutError:
            return BackendHealth(False, f"health probe timed out after {timeout:g} s", missed=True)
        except Exception as exc:  # a probe reports, it never raises
            return BackendHealth(False, f"health probe failed: {exc!r}")

    async def probe_generation(self, endpoint: Endpoint, timeout: float) -> bool:
        """One greedy token on the endpoint the watched request used (a server may serve
        only one of them), on the probes' own connection: any HTTP answer counts, only
        none within `timeout` does not."""
        session = self._probe_session
        if session is None:
            return True
        ask: dict[str, object] = {"model": self.model, "max_tokens": 1, "temperature": 0}
        if endpoint == "chat":
            ask["messages"] = [{"role": "user", "content": _PROBE_TEXT}]
        else:
            ask["prompt"] = _PROBE_TEXT
        try:
            async with (
                asyncio.timeout(timeout),
                session.post(self._urls[endpoint], data=orjson.dumps(ask)) as response,
            ):
                await response.read()
        except TimeoutError:
            return False
        except Exception as exc:  # a probe reports, it never raises
            log.info("generation probe of %s failed: %r", self.url, exc)
        return True

    async def _models_health(self, session: aiohttp.ClientSession) -> BackendHealth:
        async with session.get(self._models_url) as response:
            status, body = response.status, await response.read()
        if status != 200:
            return BackendHealth(False, f"GET /v1/models answered HTTP {status}")
        served = [str(m.get("id")) for m in orjson.loads(body).get("data") or ()]
        if self.model not in served:
            return BackendHealth(False, f"model {self.model!r} is not served (serves {served})")
        return BackendHealth(True, "ok")

    def _body(
        self, raw: bytes, model: str, max_tokens: int | None = None, *, ask_usage: bool = False
    ) -> bytes:
        """The client's body, naming the served model, with its output cap set when given, and
        with `ask_usage` asking for the stream's usage (`stream_options.include_usage`): the
        gateway learns and charges by it, and leaves it out of what a client that did not
        ask for it is sent (the renderer shows usage only to those who asked)."""
        if model == self.model and max_tokens is None:
            if not ask_usage:
                return raw
            if raw[:1] == b"{" and _STREAM_OPTIONS not in raw:
                # The field goes in front of the client's bytes, left unparsed: a third of
                # the cost of parsing and serializing a long conversation again.
                return _ASK_USAGE + raw[1:]
        data = orjson.loads(raw)
        data["model"] = self.model
        if max_tokens is not None:
            data["max_tokens"] = max_tokens
            if data.get("max_completion_tokens") is not None:
                data["max_completion_tokens"] = max_tokens
        if ask_usage:
            data["stream_options"] = {**(data.get("stream_options") or {}), "include_usage": True}
        return orjson.dumps(data)

    async def _post(
        self, url: URL, body: bytes, headers: Mapping[str, str], deadline: Deadline
    ) -> aiohttp.ClientResponse:
        """Send a request; a response other than 200 is raised as the matching error."""
        if self._session is None:
            raise BackendUnavailable("not started", replica=self.url)
        remaining = deadline.remaining()
        if remaining <= 0:  # aiohttp reads a zero timeout as "no timeout"
            raise DeadlineExceeded(deadline.stage)
        # ceil_threshold=inf: aiohttp would otherwise round timeouts above 5 s up to whole seconds.
        timeout = aiohttp.ClientTimeout(total=remaining, ceil_threshold=math.inf)
        try:
            response = await self._session.post(
                url, data=body, headers=headers or None, timeout=timeout
            )
        except TimeoutError:
            raise DeadlineExceeded(deadline.stage) from None
        except aiohttp.ClientError as exc:
            raise BackendUnavailable(f"request failed: {exc!r}", replica=self.url) from exc
        if response.status != 200:
            body = await self._read(response, deadline)
            wait = decode.retry_after(response.headers, self._longest_retry_after_s)
            raise self._own(decode.status_error(response.status, body, wait))
        return response

    async def _read(self, response: aiohttp.ClientResponse, deadline: Deadline) -> bytes:
        """The whole body; the connection goes back to the pool once it is read."""
        try:
            return await response.read()
        except TimeoutError:
            response.close()
            raise DeadlineExceeded(deadline.stage) from None
        except aiohttp.ClientError as exc:
            response.close()
            raise BackendCutOff(f"Backend answer broke off: {exc!r}", replica=self.url) from exc
        except BaseException:
            response.close()
            raise

    def _ended_without_done(self) -> None:
        """A stream whose whole answer came, then ended without `[DONE]`: passed on as
        complete (said once per replica, as it is how this server ends every stream)."""
        if not self._told_no_done:
            self._told_no_done = True
            log.warning(
                "replica %s ended a stream without [DONE] after its whole answer; such "
                "streams are passed on as complete",
                self.url,
            )

    def _own(self, error: GatewayError) -> GatewayError:
        """The error, naming this replica when it is a backend failure (for the log)."""
        if isinstance(error, BackendError) and error.replica is None:
            error.replica = self.url
        return error


def _unset_max_tokens(body: ChatCompletionRequest | CompletionRequest) -> int | None:
    """The output cap to say explicitly, where the body leaves it to the server: the default a
    completion that sets no `max_tokens` runs with (16), as not every OpenAI-compatible server
    shares it and a null would mean no limit to vLLM; and a chat's when it sets both fields
    apart, as servers differ in which one wins (the gateway judged, charged and keyed it by
    `max_completion_tokens`)."""
    if isinstance(body, CompletionRequest):
        return body.max_output_tokens if body.max_tokens is None else None
    both = body.max_tokens is not None and body.max_completion_tokens is not None
    return (
        body.max_output_tokens if both and body.max_tokens != body.max_completion_tokens else None
    )


def _release_at_body_end(response: aiohttp.ClientResponse) -> None:
    """Let aiohttp pool the connection when the HTTP body ends; close it if that takes long.

    Releasing before the end would close the connection (its state is unknown), so
    streams whose terminating chunk arrives after `[DONE]` would never reuse connections.
    """
    if not response.content.is_eof():
        asyncio.get_running_loop().call_later(_BODY_END_GRACE_S, response.close)
