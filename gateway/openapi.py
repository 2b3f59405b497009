"""The gateway's OpenAPI 3.1 document, built once from the pydantic request models that
validate every body (`core.protocol`, `core.responses_protocol`), so it cannot drift from
what the gateway accepts; served at GET /openapi.json."""

from __future__ import annotations

from functools import cache
from typing import Any

import orjson
from pydantic import BaseModel
from pydantic.json_schema import JsonSchemaMode, models_json_schema
from starlette.requests import Request
from starlette.responses import Response

from core.protocol import ChatCompletionRequest, CompletionRequest, EmbeddingRequest
from core.responses_protocol import ResponsesRequest

_REF = "#/components/schemas/{model}"

_ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["message", "type", "param", "code"],
            "properties": {
                "message": {"type": "string"},
                "type": {"type": "string"},
                "param": {"type": ["string", "null"]},
                "code": {"type": ["string", "null"]},
            },
        }
    },
}
_OBJECT: dict[str, Any] = {"type": "object"}
_ERROR_STATUSES = {
    "400": "Invalid request: the OpenAI error envelope names the parameter.",
    "401": "Missing or unknown API key.",
    "403": "The key may not use this model.",
    "404": "Unknown model, route or response.",
    "405": "Method not allowed.",
    "408": "The body did not arrive within the parse budget.",
    "413": "The body is over the size limit.",
    "415": "The body is not application/json.",
    "429": "Rate limited, overloaded, or the upstream quota spent.",
    "502": "The backend failed.",
    "503": "No healthy backend.",
    "504": "A stage ran out of its deadline.",
}

# The query of `GET /v1/responses/{response_id}/input_items` (`gateway.responses.item_list`).
_LIST_QUERY: list[dict[str, Any]] = [
    {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 100}},
    {"name": "order", "in": "query", "schema": {"type": "string", "enum": ["asc", "desc"]}},
    {"name": "after", "in": "query", "schema": {"type": "string"}},
]

_POSTS: dict[str, tuple[str, type[BaseModel], bool]] = {
    "/v1/chat/completions": ("createChatCompletion", ChatCompletionRequest, True),
    "/v1/completions": ("createCompletion", CompletionRequest, True),
    "/v1/embeddings": ("createEmbedding", EmbeddingRequest, False),
    "/v1/responses": ("createResponse", ResponsesRequest, True),
}


def _json(schema: dict[str, Any]) -> dict[str, Any]:
    return {"application/json": {"schema": schema}}


def _responses(ok: dict[str, Any], *, stream: bool = False) -> dict[str, Any]:
    content = _json(ok)
    if stream:
        content["text/event-stream"] = {"schema": {}}  # events: checked in this suite by type
    answers: dict[str, Any] = {"200": {"description": "OK", "content": content}}
    for status, description in _ERROR_STATUSES.items():
        answers[status] = {"description": description, "content": _json(_ERROR_SCHEMA)}
    return answers


def _get(operation_id: str, ok: dict[str, Any], media_type: str = "application/json") -> Any:
    answers = _responses(ok)
    if media_type != "application/json":
        answers["200"]["content"] = {media_type: {"schema": {"type": "string"}}}
    return {"get": {"operationId": operation_id, "responses": answers}}


@cache
def openapi_document() -> bytes:
    """The document, as JSON bytes."""
    models: list[tuple[type[BaseModel], JsonSchemaMode]] = [
        (model, "validation") for _, model, _ in _POSTS.values()
    ]
    refs, definitions = models_json_schema(models, ref_template=_REF)
    paths: dict[str, Any] = {}
    for path, (operation_id, model, streams) in _POSTS.items():
        paths[path] = {
            "post": {
                "operationId": operation_id,
                "requestBody": {"required": True, "content": _json(refs[(model, "validation")])},
                "responses": _responses(_OBJECT, stream=streams),
            }
        }
    # A stored response can be read back and deleted: the links let stateful fuzzers chain them.
    paths["/v1/responses"]["post"]["responses"]["200"]["links"] = {
        name: {"operationId": target, "parameters": {"response_id": "$response.body#/id"}}
        for name, target in (
            ("GetStored", "getResponse"),
            ("ListInputItems", "listInputItems"),
            ("DeleteStored", "deleteResponse"),
        )
    }
    response_id = {
        "name": "response_id",
        "in": "path",
        "required": True,
        "schema": {"type": "string"},
    }
    stored = _get("getResponse", _OBJECT)
    stored["get"]["parameters"] = [response_id]
    stored["delete"] = {
        "operationId": "deleteResponse",
        "parameters": [response_id],
        "responses": _responses(_OBJECT),
    }
    paths["/v1/responses/{response_id}"] = stored
    items = _get("listInputItems", _OBJECT)
    items["get"]["parameters"] = [response_id, *_LIST_QUERY]
    paths["/v1/responses/{response_id}/input_items"] = items
    paths["/v1/models"] = _get("listModels", _OBJECT)
    model = _get("retrieveModel", _OBJECT)
    model["get"]["parameters"] = [{**response_id, "name": "model"}]
    paths["/v1/models/{model}"] = model
    paths["/healthz"] = _get("healthz", _OBJECT)
    paths["/readyz"] = _get("readyz", _OBJECT)
    paths["/metrics"] = _get("metrics", _OBJECT, "text/plain")
    document = {
        "openapi": "3.1.0",
        "info": {"title": "llm-gateway", "version": "1"},
        "paths": paths,
        "components": {"schemas": definitions.get("$defs", {})},
    }
    return orjson.dumps(document)


async def openapi_json(request: Request) -> Response:
    return Response(openapi_document(), media_type="application/json")
