"""`VectorIndex` on Redis with the query engine (RediSearch), through RedisVL.

One hash per entry under `<name>:` with fields tenant, scope (case-sensitive TAGs), created_at
(NUMERIC), embedding (HNSW, cosine, float32) and two unindexed fields, text and body (the
payload, returned undecoded). A key is a digest of tenant, scope and text, so writing the same
prompt again replaces the entry. Each hash expires on its own TTL; RediSearch drops expired
documents from the index.

An index of another schema under the same name (another application's, or an older gateway's
with other dimensions) is refused, never searched, written into or dropped: `IndexMismatch`.

Pitfalls handled here: RedisVL renders `Tag("tenant") == ""` as no filter at all, and tag
values are split on "," at indexing time, so empty values and commas are rejected (tenants and
scopes are hex digests in the gateway). RedisVL's result processing deletes a field named
"payload", hence "body". RediSearch reports cosine distance; hits carry 1 - distance.
"""

from __future__ import annotations

import asyncio
import hashlib
from typing import Any

import numpy as np
from redis.asyncio import Redis
from redis.exceptions import RedisError
from redis.typing import EncodableT, FieldT
from redisvl.exceptions import RedisVLError
from redisvl.index import AsyncSearchIndex
from redisvl.query import VectorQuery
from redisvl.query.filter import Tag
from redisvl.schema import IndexSchema

from cache.types import CacheUnavailable, Vector, VectorHit

_ERRORS = (RedisError, RedisVLError, OSError, asyncio.TimeoutError)
_RETURN = ("text", "body", "created_at", VectorQuery.DISTANCE_ID)


class IndexMismatch(ValueError):
    """An index of the gateway's name exists in Redis with another schema."""


# The fields the gateway searches by and their FT.INFO types.
_FIELDS = (("tenant", "TAG"), ("scope", "TAG"), ("created_at", "NUMERIC"), ("embedding", "VECTOR"))


def _checked(kind: str, value: str) -> str:
    if not value or "," in value:
        raise ValueError(f"{kind} must be non-empty and free of commas, got {value!r}")
    return value


def index_schema(
    *, name: str, dimensions: int, m: int = 16, ef_construction: int = 200, ef_runtime: int = 10
) -> IndexSchema:
    """The RedisVL schema of the semantic index `name` (keys under `name:`)."""
    return IndexSchema.from_dict(
        {
            "index": {"name": name, "prefix": f"{name}:", "storage_type": "hash"},
            "fields": [
                {"name": "tenant", "type": "tag", "attrs": {"case_sensitive": True}},
                {"name": "scope", "type": "tag", "attrs": {"case_sensitive": True}},
                {"name": "created_at", "type": "numeric"},
                {
                    "name": "embedding",
                    "type": "vector",
                    "attrs": {
                        "dims": dimensions,
                        "algorithm": "hnsw",
                        "distance_metric": "cosine",
                        "datatype": "float32",
                        "m": m,
                        "ef_construction": ef_construction,
                        "ef_runtime": ef_runtime,
                    },
                },
            ],
        }
    )


class RedisVectorIndex:
    """`VectorIndex` over a shared `redis.asyncio.Redis` client (closed by its owner).

    Build with `await RedisVectorIndex.open(client, dimensions=...)`, which creates the index
    when it is missing. Every Redis or RedisVL failure surfaces as CacheUnavailable.
    """

    def __init__(
        self, client: Redis, *, dimensions: int, name: str = "gw:sem", **hnsw: int
    ) -> None:
        self.dimensions = dimensions
        self.name = name
        self._client = client
        self._index = AsyncSearchIndex(
            index_schema(name=name, dimensions=dimensions, **hnsw),
            redis_client=client,
            owns_client=False,
        )

    @classmethod
    async def open(
        cls, client: Redis, *, dimensions: int, name: str = "gw:sem", **hnsw: int
    ) -> RedisVectorIndex:
        """An index object whose Redis index exists (created if missing, never overwritten)."""
        index = cls(client, dimensions=dimensions, name=name, **hnsw)
        await index.ensure_index()
        return index

    async def ensure_index(self) -> None:
        """Creates the Redis index if missing; IndexMismatch if one exists with another
        schema (left as it is)."""
        try:
            try:
                await self._index.create(overwrite=False)
            except RedisVLError:
                if not await self._index.exists():  # else another replica created it first
                    raise
            info = await self._index.info()
        except _ERRORS as exc:
            raise CacheUnavailable(f"vector index {self.name!r}: {exc}") from exc
        problems = schema_mismatch(info, name=self.name, dimensions=self.dimensions)
        if problems:
            raise IndexMismatch(
                f"the Redis index {self.name!r} is not the gateway's semantic index "
                f"({'; '.join(problems)}): the gateway neither searches nor writes it; drop it "
                "if it is an old gateway index, or set GATEWAY_SEMANTIC_INDEX to another name"
            )

    def key(self, *, tenant: str, scope: str, text: str) -> str:
        """The hash key of an entry (one per tenant, scope and text)."""
        digest = hashlib.blake2b(f"{tenant}\0{scope}\0{text}".encode(), digest_size=16)
        return f"{self.name}:{digest.hexdigest()}"

    async def search(self, vector: Vector, *, tenant: str, scope: str, k: int) -> list[VectorHit]:
        if k <= 0:
            return []
        query = VectorQuery(
            vector=self._blob(vector),
            vector_field_name="embedding",
            filter_expression=(Tag("tenant") == _checked("tenant", tenant))
            & (Tag("scope") == _checked("scope", scope)),
            num_results=k,
        )
        query.return_fields(*_RETURN, skip_decode=["body"])
        try:
            rows = await self._index.query(query)
        except _ERRORS as exc:
            raise CacheUnavailable(f"vector search failed: {exc}") from exc
        hits = [_hit(row) for row in rows if "text" in row and "body" in row]
        hits.sort(key=lambda hit: hit.similarity, reverse=True)
        return hits

    async def add(
        self,
        vector: Vector,
        *,
        tenant: str,
        scope: str,
        text: str,
        payload: bytes,
        created_at: float,
        ttl_s: int,
    ) -> None:
        if ttl_s <= 0:
            raise ValueError("ttl_s must be positive")
        mapping: dict[FieldT, EncodableT] = {
            "tenant": _checked("tenant", tenant),
            "scope": _checked("scope", scope),
            "created_at": created_at,
            "text": text,
            "body": payload,
            "embedding": self._blob(vector),
        }
        key = self.key(tenant=tenant, scope=scope, text=text)
        try:
            # MULTI/EXEC: an entry never exists without its TTL.
            async with self._client.pipeline(transaction=True) as pipe:
                pipe.hset(key, mapping=mapping)
                pipe.expire(key, ttl_s)
                await pipe.execute()
        except _ERRORS as exc:
            raise CacheUnavailable(f"vector add failed: {exc}") from exc

    async def drop(self, *, delete_entries: bool = True) -> None:
        """Drops the Redis index (and its entries): for tests and re-indexing."""
        try:
            await self._index.delete(drop=delete_entries)
        except _ERRORS as exc:
            raise CacheUnavailable(f"dropping {self.name!r} failed: {exc}") from exc

    async def aclose(self) -> None:
        """Nothing to release: the client belongs to the caller."""

    def _blob(self, vector: Vector) -> bytes:
        array = np.asarray(vector, dtype=np.float32)
        if array.shape != (self.dimensions,):
            raise ValueError(f"expected a vector of {self.dimensions} dimensions")
        return array.tobytes()


def _hit(row: dict[str, Any]) -> VectorHit:
    text = row["text"]
    return VectorHit(
        similarity=1.0 - float(row[VectorQuery.DISTANCE_ID]),
        text=text.decode() if isinstance(text, bytes) else str(text),
        payload=bytes(row["body"]),
        created_at=float(row["created_at"]),
    )


def schema_mismatch(info: dict[str, Any], *, name: str, dimensions: int) -> list[str]:
    """How the index FT.INFO describes differs from the one the gateway creates as `name` for
    `dimensions`-dimensional vectors: its key type, prefix, fields and their types, and the
    vector's dimensions, metric and type (where FT.INFO reports them); empty if it fits."""
    problems: list[str] = []
    definition = _pairs(info.get("index_definition", []))
    key_type = _text(definition.get("key_type", "HASH"))
    if key_type.upper() != "HASH":
        problems.append(f"it indexes {key_type} keys, not hashes")
    prefixes = [_text(p) for p in definition.get("prefixes", [f"{name}:"])]
    if prefixes != [f"{name}:"]:
        problems.append(f"its key prefixes are {prefixes}, not [{name + ':'!r}]")
    fields = {}
    for attribute in info.get("attributes", []):
        described = _pairs(attribute)
        fields[_text(described.get("attribute", described.get("identifier", "")))] = described
    missing = [field for field, _ in _FIELDS if field not in fields]
    if missing:
        problems.append(f"it has no {', '.join(missing)} field (its fields: {', '.join(fields)})")
    for field, kind in _FIELDS:
        found = _text(fields.get(field, {}).get("type", kind))
        if found.upper() != kind:
            problems.append(f"its {field} field is a {found}, not a {kind}")
    vector = fields.get("embedding", {})
    dims = vector.get("dim")
    if dims is not None and int(_text(dims)) != dimensions:
        problems.append(
            f"it holds {_text(dims)}-dimensional vectors, the embedder makes {dimensions}"
        )
    for key, wanted in (("distance_metric", "COSINE"), ("data_type", "FLOAT32")):
        found = _text(vector.get(key, wanted))
        if found.upper() != wanted:
            problems.append(f"its vectors' {key} is {found}, not {wanted}")
    return problems


def _pairs(described: Any) -> dict[str, Any]:
    """An FT.INFO description (a dict, or a flat list of names, values and bare flags) as a
    dict by lower-case name."""
    if isinstance(described, dict):
        return {_text(k).lower(): v for k, v in described.items()}
    items = list(described)
    return {
        _text(items[i]).lower(): items[i + 1]
        for i in range(len(items) - 1)
        if isinstance(items[i], (str, bytes))
    }


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
