"""The arguments of a call whose header (id, name) has been sent: released as the model writes
them, as far as they are certainly a prefix of valid JSON, never past the markup that ends the
call nor a tail that may begin it."""

from __future__ import annotations

from collections.abc import Sequence

from backends.tool_calls.json_prefix import JsonPrefix
from backends.tool_calls.markers import first_marker, partial_length
from backends.tool_calls.step import Step


class OpenArguments:
    """Steps off the front of a buffer that starts inside an arguments object (at its `{`).
    `done` once the object closed, broke, met one of `ends`, or the answer ended: what was
    released is then the call's arguments, and the format reads on from there."""

    __slots__ = ("_ends", "_json", "done")

    def __init__(self, ends: Sequence[str]) -> None:
        self._ends = ends
        self._json = JsonPrefix()
        self.done = False

    def step(self, buffer: str, final: bool) -> Step | None:
        found = first_marker(buffer, self._ends) if self._ends else None
        if found is not None:
            limit = found[0]
        else:
            limit = len(buffer) - (0 if final else partial_length(buffer, self._ends))
        ended = final or found is not None
        released = self._json.scan(buffer[:limit] if limit < len(buffer) else buffer, ended)
        json = self._json
        self.done = ended or json.closed or json.broken
        if not released and not self.done:
            return None
        return Step(released, arguments=buffer[:released])
