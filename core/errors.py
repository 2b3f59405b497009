"""The one exception hierarchy: each class knows its HTTP status and OpenAI error type/code.
The model servers' own failures are in `core.backend_errors`."""

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


class PreviousResponseNotFound(GatewayError):
    """A `previous_response_id` that names no stored response of the caller's tenant: a 400
    with OpenAI's code, which agent clients (Codex) read to start the conversation afresh."""

    status = 400
    type = "invalid_request_error"
    code = "previous_response_not_found"

    def __init__(self, response_id: str) -> None:
        super().__init__(
            f"Previous response with id {response_id!r} not found.", param="previous_response_id"
        )


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


class DeadlineExceeded(GatewayError):
    """A mandatory stage ran out of budget; the message and `stage` name it."""

    status = 504
    type = "timeout_error"
    code = "deadline_exceeded"

    def __init__(self, stage: str, *, produced: int | None = None) -> None:
        stage = str(stage)  # a StageName's value, not its enum repr
        super().__init__(f"Deadline exceeded in stage {stage}.")
        self.stage = stage
        # The output tokens (all choices together) the call had produced when its time ran
        # out; None: unknown. What a run-out teaches admission depends on it.
        self.produced = produced

    def having_produced(self, produced: int) -> DeadlineExceeded:
        """The same overrun, knowing how many output tokens had come by then."""
        if self.produced is not None:
            return self
        return DeadlineExceeded(self.stage, produced=produced)


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
