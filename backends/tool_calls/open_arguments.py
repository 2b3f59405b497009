"""The arguments of a call whose header (id, name) has been sent: released as the model writes
them, as far as they are certainly a prefix of valid JSON, never past the markup that ends the
call nor a tail that may begin it (both only where the JSON is outside a string: inside one
they are the arguments' text)."""

from __future__ import annotations

from collections.abc import Sequence

from backends.tool_calls.json_prefix import JsonPrefix
from backends.tool_calls.step import Step


class OpenArguments:
    """Steps off the front of a buffer that starts inside an arguments object (at its `{`).
    `done` once the object closed, broke, met one of `ends`, or the answer ended: what was
    released is then the call's arguments, and the format reads on from there. `enclosed`:
    the arguments are a member of a call object (`{"name": ..., "arguments": {...}}`), whose
    other members after them are markup, consumed before `done` up to the object's `}` (which
    the format reads as it would right after the arguments)."""

    __slots__ = ("_arguments", "_rest", "done")

    def __init__(self, ends: Sequence[str], enclosed: bool = False) -> None:
        self._arguments = JsonPrefix(ends)
        self._rest = JsonPrefix.rest_of_object(ends) if enclosed else None
        self.done = False

    def step(self, buffer: str, final: bool) -> Step | None:
        arguments, rest = self._arguments, self._rest
        released = 0 if arguments.closed else arguments.scan(buffer, final)
        if arguments.closed and rest is not None:
            consumed = rest.scan(buffer, final, released) - (1 if rest.closed else 0)
            ended = rest.closed or rest.broken or rest.stopped
        else:
            consumed = released
            ended = arguments.closed or arguments.broken or arguments.stopped
        self.done = final or ended
        if not consumed and not self.done:
            return None
        return Step(consumed, arguments=buffer[:released])
