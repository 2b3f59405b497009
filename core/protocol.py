"""OpenAI request models: every accepted field is listed here, everything else is a 400."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    ConfigDict,
    Field,
    ValidationError,
    ValidatorFunctionWrapHandler,
    field_validator,
    model_validator,
)

from core.chat_history import check_roles, from_history
from core.digits import ascii_digits
from core.errors import InvalidRequest, UnsupportedParameter
from core.json_schemas import check_response_schema
from core.metadata import Metadata
from core.names import check_name
from core.request_model import RequestModel
from core.token_lists import token_list_error
from core.tool_specs import check_tool_choice, check_tools

Probability = Annotated[float, Field(ge=0.0, le=1.0)]
Penalty = Annotated[float, Field(ge=-2.0, le=2.0)]
# A token id travels to vLLM as a protobuf uint32: a negative or larger one is a 400 here, not a
# serialization failure (500) on the way to the backend.
TokenId = Annotated[int, Field(ge=0, le=2**32 - 1)]
INT32_MAX = 2**31 - 1  # counts travel as protobuf int32: a larger one is a 400, not a 500
COMPLETION_MAX_TOKENS = 16
"""A completion's `max_tokens` when the client sets none: OpenAI's default, and vLLM's."""
MAX_CHOICES = 128
"""The most choices one request asks for: `n`'s limit, and that of a batch's prompts times n."""
MAX_PROMPTS = 64
"""The most prompts in one batched completion (vLLM sets none; each is its own engine call)."""
MAX_EMBEDDING_INPUTS = 2048
"""The most inputs of one embeddings request (OpenAI's limit)."""
ReasoningEffort = Literal["none", "minimal", "low", "medium", "high", "xhigh"]


class StreamOptions(RequestModel):
    include_usage: bool = False
    include_obfuscation: bool | None = None
    """Accepted and ignored: this gateway never pads its stream events."""


class JsonSchemaFormat(RequestModel):
    name: str
    """Required, as OpenAI and vLLM require it (vLLM's own server refuses a format without)."""
    description: str | None = None
    schema_: dict[str, Any] | None = Field(default=None, alias="schema")
    strict: bool | None = None

    model_config = ConfigDict(populate_by_name=True)


class ResponseFormat(RequestModel):
    type: Literal["text", "json_object", "json_schema"]
    json_schema: JsonSchemaFormat | None = None

    @model_validator(mode="after")
    def _schema_present(self) -> ResponseFormat:
        if self.type != "json_schema":
            return self
        if self.json_schema is None:
            raise ValueError("json_schema is required when type is 'json_schema'")
        check_name(self.json_schema.name, "response_format.json_schema.name")
        if self.json_schema.schema_ is not None:
            check_response_schema(
                self.json_schema.schema_,
                self.json_schema.name,
                "response_format.json_schema.schema",
            )
        return self


class ChatMessage(RequestModel):
    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: str | list[dict[str, Any]] | None = None
    name: str | None = None
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: str | None = None
    reasoning_content: str | None = None


class _Sampling(RequestModel):
    """Sampling fields shared by chat and text completions (OpenAI plus vLLM extras)."""

    model: str = Field(min_length=1)
    stream: bool = False
    stream_options: StreamOptions | None = None
    n: int = Field(default=1, ge=1, le=MAX_CHOICES)
    stop: str | list[str] | None = None
    max_tokens: int | None = Field(default=None, ge=1, le=INT32_MAX)
    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    top_p: float | None = Field(default=None, gt=0.0, le=1.0)
    seed: int | None = Field(default=None, ge=-(2**63), le=2**63 - 1)  # int64, as vLLM
    presence_penalty: Penalty | None = None
    frequency_penalty: Penalty | None = None
    logit_bias: dict[str, Annotated[float, Field(ge=-100.0, le=100.0)]] | None = None
    user: str | None = None
    # vLLM extensions, accepted by vLLM's own OpenAI server as extra_body.
    top_k: int | None = Field(default=None, ge=-1, le=INT32_MAX)
    min_p: Probability | None = None
    repetition_penalty: float | None = Field(default=None, gt=0.0, le=2.0)
    min_tokens: int | None = Field(default=None, ge=0, le=INT32_MAX)
    ignore_eos: bool | None = None
    skip_special_tokens: bool = True
    spaces_between_special_tokens: bool = True
    include_stop_str_in_output: bool = False
    stop_token_ids: list[TokenId] | None = None

    @field_validator("stop")
    @classmethod
    def _check_stop(cls, value: str | list[str] | None) -> str | list[str] | None:
        stops = [value] if isinstance(value, str) else value or []
        if len(stops) > 16:
            raise ValueError("at most 16 stop sequences are allowed")
        if any(s == "" for s in stops):
            raise ValueError("stop sequences must not be empty")
        return value

    @field_validator("logit_bias")
    @classmethod
    def _check_logit_bias(cls, value: dict[str, float] | None) -> dict[str, float] | None:
        for key in value or {}:
            if not ascii_digits(key) or int(key) > 2**32 - 1:
                raise ValueError(f"keys must be token ids, got {key!r}")
        return value

    def _check_min_tokens(self, max_output: int | None, max_name: str) -> None:
        if self.min_tokens and max_output is not None and self.min_tokens > max_output:
            raise InvalidRequest(
                f"min_tokens ({self.min_tokens}) is more than {max_name} ({max_output}).",
                param="min_tokens",
            )

    @property
    def stop_list(self) -> list[str]:
        if self.stop is None:
            return []
        return [self.stop] if isinstance(self.stop, str) else list(self.stop)

    @property
    def include_usage(self) -> bool:
        return self.stream_options is not None and self.stream_options.include_usage

    @property
    def choice_count(self) -> int:
        """The choices of the answer: `n` (for each prompt of a batched completion)."""
        return self.n


class ChatCompletionRequest(_Sampling):
    messages: list[ChatMessage] = Field(min_length=1)
    max_completion_tokens: int | None = Field(default=None, ge=1, le=INT32_MAX)
    logprobs: bool = False
    top_logprobs: int | None = Field(default=None, ge=0, le=20)
    response_format: ResponseFormat | None = None
    tools: list[dict[str, Any]] | None = None
    tool_choice: str | dict[str, Any] | None = None
    parallel_tool_calls: bool | None = None
    metadata: Metadata | None = None
    store: bool | None = None
    """Accepted and ignored: this gateway keeps no chat completions to list or distil."""
    service_tier: Literal["auto", "default"] | None = None
    """Accepted and ignored: one tier here (the gateway's own classes order requests), so
    answers name none."""
    modalities: list[Literal["text", "audio"]] | None = Field(default=None, min_length=1)
    """Only `["text"]`, OpenAI's default: these models answer in text."""
    reasoning_effort: ReasoningEffort | None = None
    """A template variable, as vLLM passes it (gpt-oss reads it; other templates ignore it)."""
    verbosity: Literal["low", "medium", "high"] | None = None
    prompt_cache_key: str | None = None
    safety_identifier: str | None = None
    chat_template_kwargs: dict[str, Any] | None = None
    include_reasoning: bool = True
    """vLLM's: false leaves the thinking out of the answer (it still counts in the usage)."""
    add_generation_prompt: bool = True
    continue_final_message: bool = False

    @field_validator("messages", mode="before")
    @classmethod
    def _resolve_history(cls, value: Any) -> Any:
        if not isinstance(value, list):
            return value
        return [from_history(message, i) for i, message in enumerate(value)]

    @field_validator("modalities")
    @classmethod
    def _text_only(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and "audio" in value:
            raise UnsupportedParameter(
                'modalities other than ["text"] are not supported: this gateway answers in '
                "text only (no audio output).",
                param="modalities",
            )
        return value

    @model_validator(mode="after")
    def _check_combinations(self) -> ChatCompletionRequest:
        check_roles(self.messages)
        self._check_min_tokens(self.max_output_tokens, self.max_tokens_param)
        if self.tools:
            check_tools(self.tools)
        if self.tool_choice is not None:
            check_tool_choice(self.tool_choice, self.tools or [])
        if self.top_logprobs is not None and not self.logprobs:  # 0 too, as OpenAI (not vLLM)
            raise InvalidRequest(
                "The 'top_logprobs' parameter is only allowed when 'logprobs' is enabled.",
                param="top_logprobs",
            )
        if self.stream_options is not None and not self.stream:
            raise InvalidRequest("stream_options requires stream=true.", param="stream_options")
        if self.continue_final_message and self.add_generation_prompt:
            raise InvalidRequest(
                "continue_final_message and add_generation_prompt cannot both be true.",
                param="continue_final_message",
            )
        return self

    @property
    def max_output_tokens(self) -> int | None:
        return self.max_completion_tokens if self.max_completion_tokens else self.max_tokens

    @property
    def requested_max_tokens(self) -> int | None:
        """The output cap the client set; None where it left it to the default."""
        return self.max_output_tokens

    @property
    def max_tokens_param(self) -> str:
        """The field that sets the output cap, for the errors that name it."""
        return "max_completion_tokens" if self.max_completion_tokens else "max_tokens"


class CompletionRequest(_Sampling):
    prompt: str | list[str] | list[TokenId] | list[list[TokenId]]
    max_tokens: int | None = Field(default=None, ge=0, le=INT32_MAX)  # 0: see `echo_only`
    echo: bool = False
    logprobs: int | None = Field(default=None, ge=0, le=20)
    best_of: int | None = Field(default=None, ge=1, le=128)
    suffix: str | None = None

    @field_validator("prompt", mode="wrap")
    @classmethod
    def _token_prompt(cls, value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        return _with_token_errors(value, handler, "prompt")

    @model_validator(mode="after")
    def _check_combinations(self) -> CompletionRequest:
        if self.max_tokens == 0 and not self.echo:
            raise InvalidRequest(
                "max_tokens must be at least 1, got 0 (0 is allowed only with echo, which "
                "returns the prompt alone).",
                param="max_tokens",
            )
        self._check_min_tokens(self.max_output_tokens, "max_tokens")
        if self.suffix:
            raise UnsupportedParameter("suffix is not supported.", param="suffix")
        if self.best_of is not None and self.best_of != self.n:
            raise UnsupportedParameter("best_of other than n is not supported.", param="best_of")
        if self.stream_options is not None and not self.stream:
            raise InvalidRequest("stream_options requires stream=true.", param="stream_options")
        if isinstance(self.prompt, list) and len(self.prompt) == 0:
            raise InvalidRequest("prompt must not be empty.", param="prompt")
        for i, item in enumerate(self.prompt if isinstance(self.prompt, list) else ()):
            if isinstance(item, list) and not item:
                raise InvalidRequest(
                    f"prompt[{i}] must not be an empty token list.", param="prompt"
                )
        count = len(self.prompts)
        if count > MAX_PROMPTS:
            raise InvalidRequest(
                f"prompt holds {count} prompts; at most {MAX_PROMPTS} are allowed.",
                param="prompt",
            )
        if count * self.n > MAX_CHOICES:
            raise InvalidRequest(
                f"{count} prompts with n={self.n} ask for {count * self.n} choices; at most "
                f"{MAX_CHOICES} are allowed.",
                param="prompt",
            )
        return self

    @property
    def max_output_tokens(self) -> int:
        return COMPLETION_MAX_TOKENS if self.max_tokens is None else self.max_tokens

    @property
    def requested_max_tokens(self) -> int | None:
        """The output cap the client set; None where it left it to the default."""
        return self.max_tokens

    @property
    def max_tokens_param(self) -> str:
        """The field that sets the output cap, for the errors that name it."""
        return "max_tokens"

    @property
    def echo_only(self) -> bool:
        """`echo` with `max_tokens: 0`: the answer is the prompt (with its logprobs when
        asked), nothing generated, as vLLM's server and OpenAI's legacy API serve it."""
        return self.echo and self.max_tokens == 0

    @property
    def prompts(self) -> list[str | list[int]]:
        """Every prompt, as text or as token ids: one, or the batch a list of texts or of
        token lists is (each answered with `n` choices, as OpenAI and vLLM answer it)."""
        prompt = self.prompt
        if isinstance(prompt, str):
            return [prompt]
        if isinstance(prompt[0], int):
            return [[int(t) for t in prompt if isinstance(t, int)]]
        return [item for item in prompt if not isinstance(item, int)]

    @property
    def batched(self) -> bool:
        """Whether the request holds more than one prompt."""
        prompt = self.prompt
        return isinstance(prompt, list) and len(prompt) > 1 and not isinstance(prompt[0], int)

    @property
    def choice_count(self) -> int:
        """`n` choices for each prompt."""
        return self.n * len(self.prompts) if self.batched else self.n

    @property
    def single_prompt(self) -> str | list[int]:
        """The one prompt, as text or as token ids; a batch has none (what stands for one
        prompt must never stand for a batch: a cache key of its first prompt would be a wrong
        answer), so asking is an error."""
        prompts = self.prompts
        if len(prompts) != 1:
            raise ValueError("a batch of prompts has no single prompt")
        return prompts[0]


class EmbeddingRequest(RequestModel):
    model: str = Field(min_length=1)
    input: str | list[str] | list[TokenId] | list[list[TokenId]]
    encoding_format: Literal["float", "base64"] = "float"
    dimensions: int | None = Field(default=None, ge=1, le=INT32_MAX)
    """Matryoshka truncation, honoured by the model server (over gRPC it cannot be sent)."""
    user: str | None = None

    @field_validator("input", mode="wrap")
    @classmethod
    def _token_input(cls, value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        return _with_token_errors(value, handler, "input")

    @model_validator(mode="after")
    def _check(self) -> EmbeddingRequest:
        if isinstance(self.input, list) and len(self.input) == 0:
            raise InvalidRequest("input must not be empty.", param="input")
        if isinstance(self.input, list) and len(self.input) > MAX_EMBEDDING_INPUTS:
            raise InvalidRequest(
                f"input has more than {MAX_EMBEDDING_INPUTS} entries.", param="input"
            )
        return self

    @property
    def inputs(self) -> list[str | list[int]]:
        """Every input, as text or as token ids: one, or each of a list of texts or of token
        lists (one embedding each, in this order)."""
        items = self.input
        if isinstance(items, str):
            return [items]
        if isinstance(items[0], int):
            return [[int(t) for t in items if isinstance(t, int)]]
        return [item for item in items if not isinstance(item, int)]


def _with_token_errors(value: Any, handler: ValidatorFunctionWrapHandler, param: str) -> Any:
    """The value validated; where it fails as token ids, a 400 saying which and why (only
    then is it looked at twice)."""
    try:
        return handler(value)
    except ValidationError:
        error = token_list_error(value, param)
        if error is None:
            raise
        raise error from None
