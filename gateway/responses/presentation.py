"""A served answer shown as a Responses API response, whole or as typed events; once the
response is final it is stored (`store: true`) before the client is shown it, so its
`store` says whether it was."""

from __future__ import annotations

import orjson

from core.answers import Completion
from gateway.responses.events import Keep, ResponseEvents, kept
from gateway.responses.objects import ResponseShell


class ResponsesPresentation:
    __slots__ = ("_keep", "_shell")

    def __init__(self, shell: ResponseShell, keep: Keep | None) -> None:
        self._shell = shell
        self._keep = keep

    async def body(self, completion: Completion) -> bytes:
        response = self._shell.finished(completion.choices[0], completion.usage)
        return orjson.dumps(await kept(response, self._keep))

    def renderer(self) -> ResponseEvents:
        return ResponseEvents(self._shell, self._keep)
