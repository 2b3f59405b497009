"""`/v1/responses`: create (through the one pipeline), retrieve, list the input items of and
delete stored responses.

A stored response keeps the whole conversation that led to it (earlier items, this input,
this output; `gateway.responses.stored`), so `previous_response_id` costs one lookup however
long the chain. Stored responses belong to the caller's tenant: another tenant's id reads as
not found, and so does a value under its key that the gateway did not write.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Mapping
from typing import Any

import orjson
from starlette.datastructures import QueryParams
from starlette.responses import Response

from access.caller import Caller
from budgets.request_budget import RequestBudget
from cache.response_store import ResponseStore
from core.errors import GatewayError, PreviousResponseNotFound, ResponseNotFound
from core.protocol import ChatCompletionRequest
from core.request_parsing import parse_request
from core.responses_protocol import ResponsesRequest
from gateway.model_access import as_asked
from gateway.pipeline import Pipeline
from gateway.responses.item_list import input_item_list, with_ids
from gateway.responses.objects import ResponseShell
from gateway.responses.param_names import ParamNames
from gateway.responses.presentation import ResponsesPresentation
from gateway.responses.retrieval import check_kept, check_query
from gateway.responses.stored import decode, encode
from gateway.responses.translate import chat_request, input_items
from obs.request_record import RequestRecord

log = logging.getLogger("gateway.responses")

_JSON = "application/json"


class ResponsesService:
    def __init__(self, pipeline: Pipeline, store: ResponseStore) -> None:
        self._pipeline = pipeline
        self._store = store
        # Writes not yet done, so that a follow-up on this replica never misses its parent.
        self._pending: dict[tuple[str, str], asyncio.Task[bool]] = {}

    async def create(
        self,
        raw: bytes,
        headers: dict[str, str],
        budget: RequestBudget,
        record: RequestRecord,
        caller: Caller,
    ) -> Response:
        record.note_operation("responses")
        request = parse_request(raw, ResponsesRequest)
        record.note_request(request.model, request.stream)
        history: list[dict[str, Any]] = []
        if request.previous_response_id is not None:
            stored = await self._load(caller.tenant, request.previous_response_id)
            if stored is None:
                raise PreviousResponseNotFound(request.previous_response_id)
            history = stored["items"]
        items = input_items(request)
        self._pipeline.check_message_count(len(history) + len(items), "input")
        chat, names = chat_request(request, history, items)
        try:
            return await self._serve(
                request, chat, names, (history, items), (headers, budget, record, caller)
            )
        except GatewayError as exc:  # it names the chat field; the client sent another
            renamed = names.renamed(exc)
            if renamed is exc:
                raise
            raise renamed from exc

    async def _serve(
        self,
        request: ResponsesRequest,
        chat: ChatCompletionRequest,
        names: ParamNames,
        conversation: tuple[list[dict[str, Any]], list[dict[str, Any]]],
        context: tuple[dict[str, str], RequestBudget, RequestRecord, Caller],
    ) -> Response:
        """Serve the chat request `chat` as the Responses request `request`, whose
        conversation so far is `conversation`: the stored history, then this input."""
        headers, budget, record, caller = context
        history, items = conversation
        body = self._pipeline.route(chat, caller)
        if request.store and not self._store.writable:
            # Answered all the same, but the response says it is not stored: an agent that
            # chains from its id would otherwise meet a 404 for an id it was given.
            log.warning("response %s will not be stored: the store is down", record.request_id)
            request = request.model_copy(update={"store": False})
        shell = ResponseShell(
            "resp_" + record.request_id, int(time.time()), request, body.model, names
        )
        keep = None
        if request.store:
            # This input's items get their ids now, so every later response lists them alike.
            kept_items = [*history, *with_ids(items, shell.id, len(history))]
            keep = functools.partial(self._keep, caller.tenant, kept_items)
        chat_raw = orjson.dumps(body.model_dump(mode="json", exclude_unset=True, by_alias=True))
        with as_asked(request.model):
            return await self._pipeline.serve(
                "chat",
                body,
                chat_raw,
                headers,
                budget,
                record,
                caller,
                ResponsesPresentation(shell, keep),
            )

    async def retrieve(self, tenant: str, response_id: str, query: QueryParams) -> Response:
        """A stored response, as its query asks (`gateway.responses.retrieval`)."""
        include = check_query(query)
        stored = await self._load(tenant, response_id)
        if stored is None:
            raise ResponseNotFound(response_id)
        check_kept(stored["response"], include)
        return Response(orjson.dumps(stored["response"]), media_type=_JSON)

    async def input_items(
        self, tenant: str, response_id: str, query: Mapping[str, str]
    ) -> Response:
        """A page of a stored response's input items (`gateway.responses.item_list`)."""
        stored = await self._load(tenant, response_id)
        if stored is None:
            raise ResponseNotFound(response_id)
        page = input_item_list(stored, response_id, query)
        return Response(orjson.dumps(page), media_type=_JSON)

    async def delete(self, tenant: str, response_id: str) -> Response:
        await self._settled(tenant, response_id)
        if not await self._store.delete(tenant, response_id):
            raise ResponseNotFound(response_id)
        body = {"id": response_id, "object": "response.deleted", "deleted": True}
        return Response(orjson.dumps(body), media_type=_JSON)

    async def aclose(self, timeout_s: float) -> None:
        """Let the writes in flight finish (bounded), then close the store."""
        pending = list(self._pending.values())
        if pending:
            await asyncio.wait(pending, timeout=timeout_s)
        await self._store.aclose()

    async def _load(self, tenant: str, response_id: str) -> dict[str, Any] | None:
        await self._settled(tenant, response_id)
        raw = await self._store.get(tenant, response_id)
        return None if raw is None else decode(raw, response_id)

    async def _settled(self, tenant: str, response_id: str) -> None:
        task = self._pending.get((tenant, response_id))
        if task is not None:
            await asyncio.shield(task)

    async def _keep(
        self, tenant: str, items: list[dict[str, Any]], response: dict[str, Any]
    ) -> bool:
        """Store a final response (a failed one too: its id was given) before the client is
        shown it, within the store's own timeout; whether it was stored. A failure to store
        is logged, never raised. The write is a task of its own, so a client that leaves
        meanwhile does not cut it short, and a read of the same id waits for it."""
        value = encode(response, items)
        slot = (tenant, response["id"])
        task = asyncio.get_running_loop().create_task(self._write(slot, value))
        self._pending[slot] = task
        return await asyncio.shield(task)

    async def _write(self, slot: tuple[str, str], value: bytes) -> bool:
        try:
            await self._store.put(*slot, value)
        except GatewayError as exc:
            log.warning("response %s was not stored: %s", slot[1], exc.message)
            return False
        except Exception:
            log.exception("response %s was not stored", slot[1])
            return False
        finally:
            self._pending.pop(slot, None)
        return True
