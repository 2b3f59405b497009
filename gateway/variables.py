"""Every `GATEWAY_*` variable the gateway reads, in one place: a name set in the environment
that is not here is a typo (`GATEWAY_API_KEY_FILE`) that would otherwise be ignored, and may
silently turn off what it meant to turn on, so it stops the gateway at startup.

The README's configuration table lists exactly these; tests hold the code, this set and the
table together.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from typing import Final

from core.env import SettingsError

PREFIX = "GATEWAY_"
SERVICE_LINK = re.compile(
    r"GATEWAY_(?:SERVICE_(?:HOST|PORT)(?:_\w+)?|PORT_\d+_(?:TCP|UDP|SCTP)(?:_(?:PROTO|PORT|ADDR))?)"
)
"""What Kubernetes injects for a Service named `gateway` (Docker-link variables): not a typo,
and nothing the gateway reads (`GATEWAY_PORT=tcp://...` among them is refused, with a hint)."""
STANDIN_PREFIX = (
    "GATEWAY_SIM_"  # the embedded vLLM stand-in's own (`python -m standin.vllm --help`)
)

KNOWN: frozenset[str] = frozenset(
    {
        "GATEWAY_HOST",
        "GATEWAY_PORT",
        "GATEWAY_WORKERS",
        "GATEWAY_DRAIN_DELAY_S",
        "GATEWAY_SHUTDOWN_GRACE_S",
        "GATEWAY_LOG_LEVEL",
        "GATEWAY_BACKENDS",
        "GATEWAY_API_KEYS_FILE",
        "GATEWAY_API_KEYS",
        "GATEWAY_API_KEYS_RELOAD_S",
        "GATEWAY_LIMIT_REPLICAS",
        "GATEWAY_LIMIT_TIMEOUT_MS",
        "GATEWAY_LIMIT_DEFAULT_MAX_TOKENS",
        "GATEWAY_MAX_BODY_BYTES",
        "GATEWAY_MAX_HEADER_BYTES",
        "GATEWAY_HEADER_TIMEOUT_S",
        "GATEWAY_MAX_CONNECTIONS",
        "GATEWAY_MAX_MESSAGES",
        "GATEWAY_SEND_TIMEOUT_S",
        "GATEWAY_GRPC_CHANNELS",
        "GATEWAY_HTTP_CONNECTIONS",
        "GATEWAY_TOOL_PARSERS",
        "GATEWAY_REASONING_PARSERS",
        "GATEWAY_SPLIT_SPECIAL_TOKENS",
        "GATEWAY_GENERATION_CONFIG",
        "GATEWAY_TOKENIZER_DIRS",
        "GATEWAY_TOKENIZER_CACHE_DIR",
        "GATEWAY_HEALTH_INTERVAL_S",
        "GATEWAY_HEALTH_TIMEOUT_S",
        "GATEWAY_HEALTH_FAILURES",
        "GATEWAY_DNS_REFRESH_S",
        "GATEWAY_SLOW_START_S",
        "GATEWAY_PREFIX_ROUTING_WEIGHT",
        "GATEWAY_MODEL_ROUTES",
        "GATEWAY_BUDGET_TOTAL_MS",
        "GATEWAY_BUDGET_TTFT_MS",
        "GATEWAY_BUDGET_ADMISSION_MS",
        "GATEWAY_BUDGET_STALL_MS",
        "GATEWAY_BATCH_BUDGET_TOTAL_MS",
        "GATEWAY_BATCH_BUDGET_TTFT_MS",
        "GATEWAY_BATCH_BUDGET_ADMISSION_MS",
        "GATEWAY_BATCH_BUDGET_STALL_MS",
        "GATEWAY_BUDGET_PARSE_MS",
        "GATEWAY_BUDGET_EXACT_CACHE_MS",
        "GATEWAY_BUDGET_SEMANTIC_CACHE_MS",
        "GATEWAY_ADMISSION",
        "GATEWAY_ADMISSION_MAX_INFLIGHT",
        "GATEWAY_ADMISSION_MAX_QUEUE",
        "GATEWAY_ADMISSION_BATCH_SHARE",
        "GATEWAY_ADMISSION_BATCH_MIN_SHARE",
        "GATEWAY_ADMISSION_PREDICT",
        "GATEWAY_ADMISSION_OUTPUT_QUANTILE",
        "GATEWAY_DEFAULT_PRIORITY",
        "GATEWAY_PRIORITY_BY_TENANT",
        "GATEWAY_RETRY_ATTEMPTS",
        "GATEWAY_GRPC_WATCH_WHOLE_ANSWERS",
        "GATEWAY_OUTLIER_FAILURES",
        "GATEWAY_OUTLIER_EJECTION_S",
        "GATEWAY_OUTLIER_MAX_EJECTION_S",
        "GATEWAY_HANG_PROBE",
        "GATEWAY_HANG_PROBE_FACTOR",
        "GATEWAY_HANG_PROBE_MS_PER_TOKEN",
        "GATEWAY_SYSTEM_FINGERPRINT",
        "GATEWAY_REDIS_URL",
        "GATEWAY_CACHE",
        "GATEWAY_CACHE_TTL_S",
        "GATEWAY_CACHE_MAX_ENTRIES",
        "GATEWAY_CACHE_NEAR_ENTRIES",
        "GATEWAY_CACHE_NEAR_TTL_S",
        "GATEWAY_CACHE_REQUIRE_REPRODUCIBLE",
        "GATEWAY_PROMPT_VERSION",
        "GATEWAY_MODEL_REVISIONS",
        "GATEWAY_REDIS_TIMEOUT_MS",
        "GATEWAY_REDIS_BREAKER_FAILURES",
        "GATEWAY_REDIS_BREAKER_COOLDOWN_MS",
        "GATEWAY_SEMANTIC_CACHE",
        "GATEWAY_SEMANTIC_THRESHOLD",
        "GATEWAY_SEMANTIC_MAX_CHARS",
        "GATEWAY_SEMANTIC_MAX_ENTRIES",
        "GATEWAY_SEMANTIC_MAX_ERROR_RATE",
        "GATEWAY_SEMANTIC_AUDIT_RATE",
        "GATEWAY_SEMANTIC_TIMEOUT_MS",
        "GATEWAY_SEMANTIC_INDEX",
        "GATEWAY_EMBEDDING_MODEL",
        "GATEWAY_SEMANTIC_CLAUSE_ADAPTER",
        "GATEWAY_EMBEDDING_BACKEND",
        "GATEWAY_EMBEDDING_PRECISION",
        "GATEWAY_EMBEDDING_THREADS",
        "GATEWAY_EMBEDDING_CACHE_DIR",
        "GATEWAY_WRITEBACK_QUEUE",
        "GATEWAY_COALESCE",
        "GATEWAY_RESPONSES_TTL_S",
        "GATEWAY_RESPONSES_MAX_ENTRIES",
        "GATEWAY_LOG_FORMAT",
        "GATEWAY_TRACE_CONTENT",
    }
)


def check_variable_names(env: Mapping[str, str]) -> None:
    """Stop on any `GATEWAY_*` name the gateway does not read, naming each (and the known
    name it is closest to)."""
    unknown = sorted(
        name
        for name in env
        if name.startswith(PREFIX)
        and name not in KNOWN
        and not name.startswith(STANDIN_PREFIX)
        and not SERVICE_LINK.fullmatch(name)
    )
    if unknown:
        raise SettingsError(
            "unknown variables (see the README's configuration table): "
            + "; ".join(_described(name) for name in unknown)
        )


REMOVED: Final[Mapping[str, str]] = {
    "GATEWAY_CACHE_NORMALIZE_WHITESPACE": "removed: cache keys take message text as sent, "
    "since a backend may answer text that differs only in whitespace differently",
}
"""Variables of earlier releases, and why they went: named so, not as unknown typos."""


def _described(name: str) -> str:
    if name in REMOVED:
        return f"{name} ({REMOVED[name]})"
    close = difflib.get_close_matches(name, KNOWN, n=1, cutoff=0.8)
    return f"{name} (did you mean {close[0]}?)" if close else name
