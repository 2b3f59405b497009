"""The one exception hierarchy: each class knows its HTTP status and OpenAI error type/code."""

from __future__ import annotations

import math
from typing import Any, ClassVar, Self

import orjson


class GatewayError(Exception):
    """Base of every error the gateway reports to a client."""

    status: ClassVar[int] = 500
    type: ClassVar[str] = "server_error"
    code: ClassVar[str | None] = None
    caller_headers: dict[str, str] | None = None
    """What the answer says of its caller beside the error (the key's rate limits), set by
    the layer that knows it; None until one has."""

    def __init__(self, message: str, *, param: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.param = param

    def twin(self) -> Self:
        """A copy of this error that its holder may change (param, message, headers): one
        error object can reach several callers (a coalesced backend call)."""
        twin = type(self).__new__(type(self))
        twin.__dict__.update(self.__dict__)
        twin.args = self.args
        return twin

    def to_dict(self) -> dict[str, Any]:
        return {
            "error": {
                "message": self.public_message,
                "type": self.type,
                "param": self.param,
                "code": self.code,
            }
        }

    @property
    def public_message(self) -> str:
        """What the client is told; `message` is what the log says."""
        return self.message

    def to_json(self) -> bytes:
        return orjson.dumps(self.to_dict())

    def headers(self) -> dict[str, str]:
        return {}


class InvalidRequest(GatewayError):
    """The request is malformed or a value is out of range."""

    status = 400
    type = "invalid_request_error"
    code = "invalid_value"


class InvalidJSON(InvalidRequest):
    code = "invalid_json"


class ContextLengthExceeded(InvalidRequest):
    """The prompt, or the prompt plus `max_tokens`, does not fit the model's context."""

    code = "context_length_exceeded"


class TooManyMessages(InvalidRequest):
    """OpenAI's wording and code for an array above its maximum length."""

    code = "array_above_max_length"

    def __init__(self, param: str, count: int, limit: int) -> None:
        super().__init__(
            f"Invalid '{param}': array too long. Expected an array with maximum length "
            f"{limit}, but got an array with length {count} instead.",
            param=param,
        )


class TooManyProperties(InvalidRequest):
    """OpenAI's wording and code for an object above its maximum number of keys."""

    code = "object_above_max_properties"

    def __init__(self, param: str, count: int, limit: int) -> None:
        super().__init__(
            f"Invalid '{param}': too many properties. Expected an object with at most {limit} "
            f"properties, but got an object with {count} properties instead.",
            param=param,
        )


class StringTooLong(InvalidRequest):
    """OpenAI's wording and code for a string above its maximum length."""

    code = "string_above_max_length"

    def __init__(self, param: str, length: int, limit: int, what: str = "a string") -> None:
        super().__init__(
            f"Invalid '{param}': string too long. Expected {what} with maximum length {limit}, "
            f"but got a string with length {length} instead.",
            param=param,
        )


class InvalidFunctionParameters(InvalidRequest):
    """A function tool's `parameters` is not a valid JSON Schema (OpenAI's code)."""

    code = "invalid_function_parameters"


class InvalidJsonSchema(InvalidRequest):
    """A structured output's `schema` is not a valid JSON Schema (OpenAI's code)."""

    code = "invalid_json_schema"


class UnsupportedParameter(InvalidRequest):
    """A parameter the gateway (or the chosen backend) cannot honour."""

    code = "unsupported_parameter"


class InvalidApiKey(GatewayError):
    """No key, or one that is not in the key set."""

    status = 401
    type = "invalid_request_error"
    code = "invalid_api_key"

    def headers(self) -> dict[str, str]:
        return {"www-authenticate": 'Bearer realm="llm-gateway"'}


class RateLimited(GatewayError):
    """A key's request limit: 429 with when to retry, in OpenAI's shape and headers."""

    status = 429
    type = "requests"
    code = "rate_limit_exceeded"

    def __init__(self, message: str, *, headers: dict[str, str]) -> None:
        super().__init__(message)
        self._headers = headers
        self.caller_headers = headers

    def headers(self) -> dict[str, str]:
        return dict(self._headers)


class RequestTooLarge(InvalidRequest):
    """One request reserves more tokens than a whole token limit holds: waiting cannot help,
    so it is a 400 (not a 429 whose Retry-After could never be honoured)."""

    code = "request_too_large"


class TokensRateLimited(RateLimited):
    """A key's token limit (per minute or per day)."""

    type = "tokens"


class ModelNotFound(GatewayError):
    status = 404
    type = "invalid_request_error"
    code = "model_not_found"

    def __init__(self, model: str) -> None:
        super().__init__(
            f"The model {model!r} does not exist or is not served here.", param="model"
        )


class RouteNotFound(GatewayError):
    status = 404
    type = "invalid_request_error"
    code = "not_found"


class ResponseNotFound(GatewayError):
    """A stored response that does not exist, expired, or belongs to another tenant: all
    three read the same, so an id never tells a caller that another tenant's response exists."""

    status = 404
    type = "invalid_request_error"
    code = "response_not_found"

    def __init__(self, response_id: str, param: str | None = None) -> None:
        super().__init__(f"No response found with id {response_id!r}.", param=param)


class StoreUnavailable(GatewayError):
    status = 503
    type = "service_unavailable"
    code = "response_store_unavailable"


class MethodNotAllowed(GatewayError):
    status = 405
    type = "invalid_request_error"
    code = "method_not_allowed"


class PayloadTooLarge(GatewayError):
    status = 413
    type = "invalid_request_error"
    code = "payload_too_large"


class UnsupportedMediaType(GatewayError):
    status = 415
    type = "invalid_request_error"
    code = "unsupported_media_type"


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


class DeadlineExceeded(GatewayError):
    """A mandatory stage ran out of budget; the message and `stage` name it."""

    status = 504
    type = "timeout_error"
    code = "deadline_exceeded"

    def __init__(self, stage: str) -> None:
        stage = str(stage)  # a StageName's value, not its enum repr
        super().__init__(f"Deadline exceeded in stage {stage}.")
        self.stage = stage


class DeadlineTooShort(InvalidRequest):
    """Even an idle replica is predicted to miss the request's deadline: no wait can help, so
    it is a 400 without Retry-After (a 429 would have clients retry it in vain)."""

    code = "deadline_too_short"


class Overloaded(GatewayError):
    """Admission refused the request: the queue cannot serve it within its budget."""

    status = 429
    type = "rate_limit_error"
    code: ClassVar[str | None] = "overloaded"

    def __init__(self, message: str, *, retry_after_s: float, code: str = "overloaded") -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s
        self.code = code  # type: ignore[misc]

    def headers(self) -> dict[str, str]:
        return retry_headers(self.retry_after_s)


def retry_headers(retry_after_s: float) -> dict[str, str]:
    """`Retry-After` in whole seconds (at least 1) and the OpenAI SDKs' `retry-after-ms`."""
    return {
        "retry-after": str(max(1, math.ceil(retry_after_s))),
        "retry-after-ms": str(max(1, math.ceil(retry_after_s * 1000))),
    }
