"""Span, attribute and stage names in one place, so traces, metrics and dashboards agree.

GenAI and HTTP names follow the OpenTelemetry semantic conventions; `gateway.*` names are
this gateway's own. Prompt and answer text go only into `GEN_AI_INPUT_MESSAGES` /
`GEN_AI_OUTPUT_MESSAGES`, and only when `Tracing.record_content` is true.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Final
from urllib.parse import urlsplit

from core.stages import StageName

# Stages: the `stage` label of gateway_stage_duration_seconds, as the request's Timeline
# names them (and Server-Timing shows them).
STAGE_PARSE: Final = StageName.PARSE
STAGE_EXACT_CACHE: Final = StageName.EXACT_CACHE
STAGE_SEMANTIC_CACHE: Final = StageName.SEMANTIC_CACHE
STAGE_EMBED: Final = StageName.EMBED
STAGE_SEARCH: Final = StageName.SEARCH
STAGE_ADMISSION: Final = StageName.ADMISSION
STAGE_TTFT: Final = StageName.TTFT
STAGE_BACKEND: Final = StageName.BACKEND
STAGE_STREAM: Final = StageName.STREAM
STAGE_WRITEBACK: Final = StageName.WRITEBACK
STAGES: Final = (
    STAGE_PARSE,
    STAGE_EXACT_CACHE,
    STAGE_SEMANTIC_CACHE,
    STAGE_EMBED,
    STAGE_SEARCH,
    STAGE_ADMISSION,
    STAGE_TTFT,
    STAGE_BACKEND,
    STAGE_STREAM,
    STAGE_WRITEBACK,
)

# Child span names, one per stage. The backend span uses `backend_span_name` instead.
SPAN_PARSE: Final = "gateway.parse"
SPAN_EXACT_CACHE: Final = "gateway.cache.exact"
SPAN_SEMANTIC_CACHE: Final = "gateway.cache.semantic"
SPAN_EMBED: Final = "gateway.cache.semantic.embed"
SPAN_SEARCH: Final = "gateway.cache.semantic.search"
SPAN_ADMISSION: Final = "gateway.admission"
SPAN_WRITEBACK: Final = "gateway.writeback"
STAGE_SPANS: Final[dict[str, str]] = {
    STAGE_PARSE: SPAN_PARSE,
    STAGE_EXACT_CACHE: SPAN_EXACT_CACHE,
    STAGE_SEMANTIC_CACHE: SPAN_SEMANTIC_CACHE,
    STAGE_EMBED: SPAN_EMBED,
    STAGE_SEARCH: SPAN_SEARCH,
    STAGE_ADMISSION: SPAN_ADMISSION,
    STAGE_WRITEBACK: SPAN_WRITEBACK,
}

EVENT_FIRST_TOKEN: Final = "gateway.first_token"

# HTTP server span (semconv).
HTTP_REQUEST_METHOD: Final = "http.request.method"
HTTP_ROUTE: Final = "http.route"
HTTP_RESPONSE_STATUS_CODE: Final = "http.response.status_code"
URL_PATH: Final = "url.path"
ERROR_TYPE: Final = "error.type"
# The `error.type` of a request whose client left (the access log's error code, nginx's 499
# "client closed request"): named, but no error status, as it is nobody's failure here.
ERROR_CLIENT_CLOSED: Final = "client_closed_request"
SERVER_ADDRESS: Final = "server.address"
SERVER_PORT: Final = "server.port"

# GenAI (semconv). gen_ai.system was renamed gen_ai.provider.name; both are set for old UIs.
GEN_AI_OPERATION_NAME: Final = "gen_ai.operation.name"
GEN_AI_SYSTEM: Final = "gen_ai.system"
GEN_AI_PROVIDER_NAME: Final = "gen_ai.provider.name"
# The provider names by how the replica is reached: vLLM's own gRPC protocol (no well-known
# value: a custom one), or the OpenAI REST API, which semconv names `openai` whoever serves it.
GEN_AI_PROVIDER_VLLM: Final = "vllm"
GEN_AI_PROVIDER_OPENAI: Final = "openai"
_PROVIDERS: Final = {
    "grpc": GEN_AI_PROVIDER_VLLM,
    "http": GEN_AI_PROVIDER_OPENAI,
    "https": GEN_AI_PROVIDER_OPENAI,
}
GEN_AI_REQUEST_MODEL: Final = "gen_ai.request.model"
GEN_AI_REQUEST_MAX_TOKENS: Final = "gen_ai.request.max_tokens"
GEN_AI_REQUEST_TEMPERATURE: Final = "gen_ai.request.temperature"
GEN_AI_REQUEST_TOP_P: Final = "gen_ai.request.top_p"
GEN_AI_REQUEST_SEED: Final = "gen_ai.request.seed"
GEN_AI_REQUEST_CHOICE_COUNT: Final = "gen_ai.request.choice.count"
GEN_AI_RESPONSE_MODEL: Final = "gen_ai.response.model"
GEN_AI_RESPONSE_ID: Final = "gen_ai.response.id"
GEN_AI_RESPONSE_FINISH_REASONS: Final = "gen_ai.response.finish_reasons"
GEN_AI_USAGE_INPUT_TOKENS: Final = "gen_ai.usage.input_tokens"
GEN_AI_USAGE_OUTPUT_TOKENS: Final = "gen_ai.usage.output_tokens"
# Opt-in content (GATEWAY_TRACE_CONTENT=true only).
GEN_AI_INPUT_MESSAGES: Final = "gen_ai.input.messages"
GEN_AI_OUTPUT_MESSAGES: Final = "gen_ai.output.messages"

# The gateway's own.
ATTR_REQUEST_ID: Final = "gateway.request.id"
ATTR_PRIORITY: Final = "gateway.priority"
ATTR_TENANT: Final = "gateway.tenant"
ATTR_KEY_ID: Final = "gateway.api_key.id"  # the first 12 hex digits of the key's SHA-256
ATTR_CACHE_RESULT: Final = "gateway.cache.result"
ATTR_CACHE_SHADOW: Final = "gateway.cache.shadow"  # shadow mode: what `on` would have found
ATTR_CACHE_AGE_S: Final = "gateway.cache.age_s"
ATTR_SEMANTIC_SIMILARITY: Final = "gateway.cache.semantic.similarity"
ATTR_SEMANTIC_THRESHOLD: Final = "gateway.cache.semantic.threshold"
ATTR_SEMANTIC_VERDICT: Final = "gateway.cache.semantic.verdict"
ATTR_BUDGET_REMAINING_MS: Final = "gateway.budget.remaining_ms"
ATTR_BUDGET_EXCEEDED: Final = "gateway.budget.exceeded"
ATTR_REPLICA: Final = "gateway.replica"
ATTR_ATTEMPT: Final = "gateway.backend.attempt"
ATTR_COALESCED: Final = "gateway.coalesced"
ATTR_SHED_REASON: Final = "gateway.shed.reason"
ATTR_WRITEBACK_RESULT: Final = "gateway.writeback.result"


@lru_cache(maxsize=256)
def backend_span_name(operation: str, model: str) -> str:
    """The GenAI client span name, `{gen_ai.operation.name} {gen_ai.request.model}`."""
    return f"{operation} {model}"


@lru_cache(maxsize=1024)
def gen_ai_provider(replica: str) -> str | None:
    """The `gen_ai.provider.name` of the replica at URL `replica`, by its scheme as
    GATEWAY_BACKENDS reads it (`grpc://` vLLM, `http(s)://` OpenAI-compatible); None for
    another (a test double's)."""
    return _PROVIDERS.get(replica.partition("://")[0])


_DEFAULT_PORTS: Final = {"http": 80, "https": 443}


@lru_cache(maxsize=1024)
def server_endpoint(replica: str) -> tuple[str, int] | None:
    """The `server.address` and `server.port` of the replica at URL `replica` (the scheme's
    port when the URL names none); None when it names no host."""
    try:
        url = urlsplit(replica)
        port = url.port
    except ValueError:
        return None
    if not url.hostname:
        return None
    if port is None:
        port = _DEFAULT_PORTS.get(url.scheme)
    return None if port is None else (url.hostname, port)
