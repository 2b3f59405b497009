"""The Responses API request (`POST /v1/responses`): every accepted field is listed here, and
what this gateway cannot do (hosted tools, background mode, images) is a 400 naming it."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, Field, model_validator

from core.errors import InvalidRequest, UnsupportedParameter
from core.json_schemas import check_function_parameters, check_response_schema
from core.metadata import Metadata
from core.names import check_name
from core.protocol import ReasoningEffort
from core.request_model import RequestModel

OUTPUT_TEXT_LOGPROBS = "message.output_text.logprobs"
INCLUDABLE = frozenset({OUTPUT_TEXT_LOGPROBS})  # what `include` may ask for


class TextFormat(RequestModel):
    type: Literal["text", "json_object", "json_schema"] = "text"
    name: str | None = None
    description: str | None = None
    schema_: dict[str, Any] | None = Field(default=None, alias="schema")
    strict: bool | None = None

    model_config = ConfigDict(populate_by_name=True)

    @model_validator(mode="after")
    def _schema_present(self) -> TextFormat:
        if self.type != "json_schema":
            return self
        if self.name is None:  # required, as for chat's response_format.json_schema
            raise InvalidRequest(
                "Missing required parameter: text.format.name.", param="text.format.name"
            )
        check_name(self.name, "text.format.name")
        if self.schema_ is None:
            raise InvalidRequest(
                "text.format.schema is required when its type is 'json_schema'.",
                param="text.format.schema",
            )
        check_response_schema(self.schema_, self.name, "text.format.schema")
        return self


class TextConfig(RequestModel):
    format: TextFormat = TextFormat()
    verbosity: Literal["low", "medium", "high"] | None = None


class StreamOptions(RequestModel):
    # Accepted and ignored: the gateway's stream events carry no `obfuscation` padding.
    include_obfuscation: bool | None = None


class ReasoningConfig(RequestModel):
    effort: ReasoningEffort | None = None
    summary: Literal["auto", "concise", "detailed"] | None = None
    generate_summary: Literal["auto", "concise", "detailed"] | None = None


class ResponsesRequest(RequestModel):
    model: str = Field(min_length=1)
    input: str | list[dict[str, Any]] = Field(min_length=1)
    instructions: str | None = None
    tools: list[dict[str, Any]] | None = None
    tool_choice: str | dict[str, Any] | None = None
    parallel_tool_calls: bool | None = None
    max_tool_calls: int | None = Field(default=None, ge=1, le=2**31 - 1)
    max_output_tokens: int | None = Field(default=None, ge=1, le=2**31 - 1)
    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    top_p: float | None = Field(default=None, gt=0.0, le=1.0)
    text: TextConfig | None = None
    reasoning: ReasoningConfig | None = None
    store: bool = True
    previous_response_id: str | None = None
    stream: bool = False
    stream_options: StreamOptions | None = None
    background: bool = False
    include: list[str] | None = None
    top_logprobs: int | None = Field(default=None, ge=0, le=20)
    metadata: Metadata | None = None
    truncation: Literal["disabled", "auto"] | None = None
    user: str | None = None
    safety_identifier: str | None = None
    prompt_cache_key: str | None = None
    service_tier: Literal["auto", "default"] | None = None

    @property
    def logprobs(self) -> bool:
        """Whether the output text shows its tokens' logprobs: asked for with `include`, as
        at OpenAI (`top_logprobs` alone says how many alternatives, and shows none)."""
        return OUTPUT_TEXT_LOGPROBS in (self.include or ())

    @model_validator(mode="after")
    def _check(self) -> ResponsesRequest:
        if self.background:
            raise UnsupportedParameter(
                "Background mode is not supported by this gateway; send the request without "
                "background, streamed or not.",
                param="background",
            )
        if self.stream_options is not None and not self.stream:
            raise InvalidRequest("stream_options requires stream=true.", param="stream_options")
        if self.truncation == "auto":
            raise UnsupportedParameter(
                "truncation 'auto' is not supported; the gateway never drops input silently.",
                param="truncation",
            )
        for i, value in enumerate(self.include or ()):
            if value not in INCLUDABLE:
                raise UnsupportedParameter(
                    f"include {value!r} is not supported (only {OUTPUT_TEXT_LOGPROBS!r}).",
                    param=f"include[{i}]",
                )
        for i, tool in enumerate(self.tools or ()):
            _check_tool(tool, i)
        if isinstance(self.tool_choice, str) and self.tool_choice not in (
            "none",
            "auto",
            "required",
        ):
            raise InvalidRequest(
                f"tool_choice {self.tool_choice!r} is not one of none, auto, required.",
                param="tool_choice",
            )
        if isinstance(self.tool_choice, dict) and (
            self.tool_choice.get("type") != "function"
            or not isinstance(self.tool_choice.get("name"), str)
        ):
            raise UnsupportedParameter(
                "tool_choice must be none, auto, required or {'type': 'function', 'name': ...}.",
                param="tool_choice",
            )
        return self


def _check_tool(tool: dict[str, Any], index: int) -> None:
    kind = tool.get("type")
    if kind != "function":
        raise UnsupportedParameter(
            f"Tools of type {kind!r} are not supported: this gateway runs no hosted tools; "
            "declare function tools and run them in your application.",
            param=f"tools[{index}].type",
        )
    if not isinstance(tool.get("name"), str):
        raise InvalidRequest(
            f"Missing required parameter: tools[{index}].name.", param=f"tools[{index}].name"
        )
    check_name(tool["name"], f"tools[{index}].name")
    unknown = set(tool) - {"type", "name", "description", "parameters", "strict"}
    if unknown:
        raise UnsupportedParameter(
            f"Unrecognized tool field: {sorted(unknown)[0]}.",
            param=f"tools[{index}].{sorted(unknown)[0]}",
        )
    parameters = tool.get("parameters")
    if parameters is not None and not isinstance(parameters, dict):
        raise InvalidRequest(
            "A function tool's parameters must be a JSON schema object.",
            param=f"tools[{index}].parameters",
        )
    if parameters is not None:
        check_function_parameters(parameters, tool["name"], f"tools[{index}].parameters")
