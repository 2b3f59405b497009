"""The errors of the model servers behind the gateway: none healthy, one that failed, cut its
answer off, was full, or refused the request; each knows its HTTP status and OpenAI type/code."""

from __future__ import annotations

from core.errors import GatewayError, retry_headers


class NoHealthyBackend(GatewayError):
    """No replica passes its health probe: retry after about one probe interval."""

    status = 503
    type = "service_unavailable"
    code = "no_healthy_backend"

    def __init__(self, message: str, *, retry_after_s: float = 1.0) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s

    def headers(self) -> dict[str, str]:
        return retry_headers(self.retry_after_s)


class BackendError(GatewayError):
    """The backend failed. `retryable` marks failures another replica may not repeat."""

    status = 502
    type = "backend_error"
    code = "backend_error"

    def __init__(self, message: str, *, retryable: bool = True, replica: str | None = None) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.replica = replica

    @property
    def public_message(self) -> str:
        """The engine's own words and the replica's address stay in the gateway's log."""
        return "The model server failed to answer this request."


class BackendUnavailable(BackendError):
    """The replica could not be reached, or dropped the connection before answering: routing
    ejects it until its health probe passes, unless no other replica of its model passes
    its own (`backends.outliers`)."""

    @property
    def public_message(self) -> str:
        return "The model server could not be reached or dropped the connection."


class BackendCutOff(BackendError):
    """The replica answered, then its answer broke off before its end (the connection
    dropped, the body was cut short, the stream ended before `[DONE]`). A replica that
    answered is reachable: this is one failure in a row, as any other backend failure."""

    @property
    def public_message(self) -> str:
        return "The model server dropped the connection before its answer ended."


class BackendOverloaded(BackendError):
    """The replica refused the request for lack of capacity (gRPC RESOURCE_EXHAUSTED, HTTP 429
    or 503): the same 429 `overloaded` answer as the gateway's own admission refusals, with the
    upstream's Retry-After when it sent one. Another replica may take the request; a full
    engine is not a broken one, so it never counts towards outlier ejection."""

    status = 429
    type = "rate_limit_error"
    code = "overloaded"

    def __init__(
        self, message: str, *, retry_after_s: float | None = None, replica: str | None = None
    ) -> None:
        super().__init__(message, retryable=True, replica=replica)
        # Without the upstream's word (vLLM never gives one), a second, as admission does
        # with no service history.
        self.retry_after_s = 1.0 if retry_after_s is None else retry_after_s

    @property
    def public_message(self) -> str:
        return "The model server is at capacity; retry later."

    def headers(self) -> dict[str, str]:
        return retry_headers(self.retry_after_s)


class BackendQuotaExhausted(BackendError):
    """The upstream's account has spent its quota (OpenAI's 429 `insufficient_quota`): not a
    passing overload, so no Retry-After promises a recovery. Another replica may bill another
    account and is tried; a replica that keeps answering so counts towards outlier ejection.
    The client is told OpenAI's 429 `insufficient_quota`, with `x-should-retry: false` (the
    official SDKs retry every other 429) unless a replica was left untried (`others_left`)."""

    status = 429
    type = "insufficient_quota"
    code = "insufficient_quota"
    others_left = False

    @property
    def public_message(self) -> str:
        """The upstream's words are about its account's billing, not the client's: logged."""
        return "The quota of the model provider behind this gateway is exhausted."

    def headers(self) -> dict[str, str]:
        return {} if self.others_left else {"x-should-retry": "false"}


class BackendRejected(GatewayError):
    """The backend refused the request as invalid; its message (and its own `code` and
    `type`, when it gave them) goes to the client."""

    status = 400
    type = "invalid_request_error"
    code = "invalid_value"

    def __init__(
        self, message: str, *, param: str | None = None, code: str = "", kind: str = ""
    ) -> None:
        super().__init__(message, param=param)
        self.code = code or self.code  # type: ignore[misc]
        self.type = kind or self.type  # type: ignore[misc]


class UpstreamModelNotFound(BackendRejected):
    """An upstream does not serve the model the gateway sent it (HTTP 404 `model_not_found`):
    404 `model_not_found` on `model`, which the pipeline re-raises naming the model the client
    asked for (`gateway.model_access.as_asked`). The upstream's words name its own model: they
    stay in `message`, never in what the client is told."""

    status = 404

    def __init__(self, message: str) -> None:
        super().__init__(message, param="model", code="model_not_found")

    @property
    def public_message(self) -> str:
        return "The model does not exist or is not served here."
