"""The caching layer's `GATEWAY_*` variables, validated with the rest of the settings."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, cast

from cache.semantic_defaults import DEFAULT_SIMILARITY_THRESHOLD, MAX_SEMANTIC_CHARS
from cache.types import CacheMode
from core.env import (
    DAY_S,
    HOUR_S,
    MINUTE_S,
    YEAR_S,
    SettingsError,
    check_dir,
    env_bool,
    env_choice,
    env_dir,
    env_float,
    env_int,
    env_map,
    env_ms,
    env_str,
)
from core.redis_client import check_redis_url, is_cluster_url

SemanticMode = str  # "off" | "shadow" | "on"
EmbeddingBackend = Literal["onnx", "torch"]
EMBEDDING_BACKENDS: tuple[EmbeddingBackend, ...] = ("onnx", "torch")
EmbeddingPrecision = Literal["fp32", "int8"]
EMBEDDING_PRECISIONS: tuple[EmbeddingPrecision, ...] = ("fp32", "int8")
DEFAULT_EMBEDDING_CACHE_DIR = Path.home() / ".cache" / "llm-gateway" / "embeddings"
_MAX_ENTRIES = 10_000_000  # an in-process cache's entries: a few KB each, tens of GB in all


@dataclass(frozen=True, slots=True)
class CacheSettings:
    """How answers are cached. Without a Redis URL, in-process caches serve instead."""

    redis_url: str = ""
    mode: CacheMode = "on"
    ttl_s: int = 3600
    memory_max_entries: int = 10_000
    near_entries: int = 1024
    near_ttl_s: int = 30
    require_reproducible: bool = True
    prompt_version: str = ""
    model_revisions: Mapping[str, str] = field(default_factory=dict)
    # model -> the settings that shape its prompts and answers (`BackendSettings.answer_shape`)
    answer_shapes: Mapping[str, str] = field(default_factory=dict)
    redis_timeout_s: float = 0.05
    breaker_failures: int = 5
    breaker_cooldown_s: float = 2.0
    semantic: SemanticMode = "off"
    semantic_threshold: float = DEFAULT_SIMILARITY_THRESHOLD
    semantic_max_chars: int = MAX_SEMANTIC_CHARS  # longer last messages skip the semantic stage
    semantic_max_entries: int = 10_000
    semantic_max_error_rate: float = 0.0  # 0: no learned error bound
    semantic_audit_rate: float = 0.05  # share of would-be hits answered fresh and judged
    semantic_timeout_s: float = 0.25
    semantic_clause_adapter: bool = True  # compare rewritten clauses with the trained adapter
    semantic_index: str = "gw:sem"  # the Redis index's name, and its keys' prefix before ":"
    embedding_model: str = ""
    embedding_backend: EmbeddingBackend = "onnx"
    embedding_precision: EmbeddingPrecision = "fp32"
    embedding_threads: int = 1
    embedding_cache_dir: Path = DEFAULT_EMBEDDING_CACHE_DIR
    writeback_queue: int = 1000
    coalesce: bool = True
    responses_ttl_s: int = 30 * 24 * 3600  # stored Responses API responses, as OpenAI keeps them
    responses_max_entries: int = 10_000  # in-process only (no Redis)

    @property
    def embedding_model_path(self) -> Path | None:
        """`GATEWAY_EMBEDDING_MODEL` as a path; None for the default model."""
        return Path(self.embedding_model) if self.embedding_model else None

    @property
    def redis_cluster(self) -> bool:
        """`GATEWAY_REDIS_URL` names a Redis Cluster (`redis+cluster://`)."""
        return is_cluster_url(self.redis_url)

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> CacheSettings:
        settings = cls._from_env(env)
        check_semantic_deployment(settings.semantic, settings.redis_url)
        if settings.semantic != "off" and settings.mode == "off":  # it would be loaded, unused
            raise SettingsError(
                f"GATEWAY_SEMANTIC_CACHE={settings.semantic} does nothing with GATEWAY_CACHE=off, "
                "which turns every cache lookup and write off: set GATEWAY_SEMANTIC_CACHE=off, "
                "or GATEWAY_CACHE to on, read-only or write-only"
            )
        if settings.embedding_precision == "int8" and settings.embedding_backend != "onnx":
            raise SettingsError(
                "GATEWAY_EMBEDDING_PRECISION=int8 needs GATEWAY_EMBEDDING_BACKEND=onnx: the int8 "
                "model is a quantized copy of the ONNX export"
            )
        return settings

    @classmethod
    def _from_env(cls, env: Mapping[str, str]) -> CacheSettings:
        d = cls()
        return cls(
            redis_url=check_redis_url("GATEWAY_REDIS_URL", env.get("GATEWAY_REDIS_URL", "")),
            mode=env_choice(env, "GATEWAY_CACHE", d.mode, ("on", "off", "read-only", "write-only")),  # type: ignore[arg-type]
            ttl_s=env_int(env, "GATEWAY_CACHE_TTL_S", d.ttl_s, low=1, high=YEAR_S),
            memory_max_entries=env_int(
                env, "GATEWAY_CACHE_MAX_ENTRIES", d.memory_max_entries, low=1, high=_MAX_ENTRIES
            ),
            near_entries=env_int(
                env, "GATEWAY_CACHE_NEAR_ENTRIES", d.near_entries, low=0, high=1_000_000
            ),
            near_ttl_s=env_int(env, "GATEWAY_CACHE_NEAR_TTL_S", d.near_ttl_s, low=1, high=DAY_S),
            require_reproducible=env_bool(
                env, "GATEWAY_CACHE_REQUIRE_REPRODUCIBLE", d.require_reproducible
            ),
            prompt_version=env.get("GATEWAY_PROMPT_VERSION", d.prompt_version),
            model_revisions=env_map(env, "GATEWAY_MODEL_REVISIONS"),
            redis_timeout_s=env_ms(
                env, "GATEWAY_REDIS_TIMEOUT_MS", d.redis_timeout_s, high_s=MINUTE_S
            ),
            breaker_failures=env_int(
                env, "GATEWAY_REDIS_BREAKER_FAILURES", d.breaker_failures, low=1, high=1000
            ),
            breaker_cooldown_s=env_ms(
                env, "GATEWAY_REDIS_BREAKER_COOLDOWN_MS", d.breaker_cooldown_s, high_s=HOUR_S
            ),
            semantic=env_choice(env, "GATEWAY_SEMANTIC_CACHE", d.semantic, ("off", "shadow", "on")),
            semantic_threshold=env_float(
                env, "GATEWAY_SEMANTIC_THRESHOLD", d.semantic_threshold, low=-1.0, high=1.0
            ),
            semantic_max_chars=env_int(
                env, "GATEWAY_SEMANTIC_MAX_CHARS", d.semantic_max_chars, low=1, high=100_000
            ),
            semantic_max_entries=env_int(
                env,
                "GATEWAY_SEMANTIC_MAX_ENTRIES",
                d.semantic_max_entries,
                low=1,
                high=_MAX_ENTRIES,
            ),
            semantic_max_error_rate=env_float(
                env, "GATEWAY_SEMANTIC_MAX_ERROR_RATE", d.semantic_max_error_rate, low=0, high=0.5
            ),
            semantic_audit_rate=env_float(
                env, "GATEWAY_SEMANTIC_AUDIT_RATE", d.semantic_audit_rate, low=0, high=0.5
            ),
            semantic_timeout_s=env_ms(
                env, "GATEWAY_SEMANTIC_TIMEOUT_MS", d.semantic_timeout_s, high_s=MINUTE_S
            ),
            semantic_clause_adapter=env_bool(
                env, "GATEWAY_SEMANTIC_CLAUSE_ADAPTER", d.semantic_clause_adapter
            ),
            semantic_index=_index_name(env_str(env, "GATEWAY_SEMANTIC_INDEX", d.semantic_index)),
            embedding_model=_embedding_model(env),
            embedding_backend=cast(
                EmbeddingBackend,
                env_choice(
                    env, "GATEWAY_EMBEDDING_BACKEND", d.embedding_backend, EMBEDDING_BACKENDS
                ),
            ),
            embedding_precision=cast(
                EmbeddingPrecision,
                env_choice(
                    env, "GATEWAY_EMBEDDING_PRECISION", d.embedding_precision, EMBEDDING_PRECISIONS
                ),
            ),
            embedding_threads=env_int(
                env, "GATEWAY_EMBEDDING_THREADS", d.embedding_threads, low=1, high=64
            ),
            embedding_cache_dir=env_dir(env, "GATEWAY_EMBEDDING_CACHE_DIR", d.embedding_cache_dir),
            writeback_queue=env_int(
                env, "GATEWAY_WRITEBACK_QUEUE", d.writeback_queue, low=1, high=1_000_000
            ),
            coalesce=env_bool(env, "GATEWAY_COALESCE", d.coalesce),
            responses_ttl_s=env_int(
                env, "GATEWAY_RESPONSES_TTL_S", d.responses_ttl_s, low=1, high=YEAR_S
            ),
            responses_max_entries=env_int(
                env,
                "GATEWAY_RESPONSES_MAX_ENTRIES",
                d.responses_max_entries,
                low=1,
                high=_MAX_ENTRIES,
            ),
        )


def _index_name(name: str) -> str:
    """GATEWAY_SEMANTIC_INDEX: letters, digits and `:_.-` (it is also a key prefix)."""
    if not re.fullmatch(r"[A-Za-z0-9:_.-]{1,100}", name):
        raise SettingsError(
            f"GATEWAY_SEMANTIC_INDEX must be 1 to 100 letters, digits and ':_.-', got {name!r}"
        )
    return name


def _embedding_model(env: Mapping[str, str]) -> str:
    """GATEWAY_EMBEDDING_MODEL: empty (the shipped model) or an existing model directory."""
    raw = env.get("GATEWAY_EMBEDDING_MODEL", "").strip()
    if raw:
        check_dir("GATEWAY_EMBEDDING_MODEL", Path(raw), must_exist=True)
    return raw


def check_semantic_deployment(semantic: SemanticMode, redis_url: str) -> None:
    """The semantic cache searches a RedisVL index (FT.SEARCH), which the query engine serves
    on a single Redis (Redis Stack, Redis 8) but not across an open-source Redis Cluster:
    without a search coordinator (Redis Stack has none) FT.CREATE lands on the node of the
    index name's slot and FT.SEARCH there sees that node's entries only (measured on Redis
    Stack 7.4: 8 of 30). The exact cache and the rate limits run on a cluster; the semantic
    cache with a cluster URL stops the gateway instead of silently missing."""
    if semantic != "off" and is_cluster_url(redis_url):
        raise SettingsError(
            f"GATEWAY_SEMANTIC_CACHE={semantic} needs a single Redis with the query engine "
            "(Redis Stack or Redis 8), but GATEWAY_REDIS_URL names a Redis Cluster "
            "(redis+cluster://), where a vector index sees one node's entries only; set "
            "GATEWAY_SEMANTIC_CACHE=off, or point GATEWAY_REDIS_URL at a single Redis Stack"
        )
