"""Blocks a replica is expected to cache because a prompt was just sent to it, counted as
held until its KV events confirm them or a short window passes.

A replica reports a prompt's blocks only after its prefill step, and the report reaches the
gateway a moment later: an agent's next turn, sent as soon as the last answer arrived, could
otherwise be routed before the gateway knows where its prefix lives, and land on a cold
replica. Recording the prompt's blocks at routing time closes that gap, as a router that
builds its prefix tree from what it sent (SMG's cache-aware policy) does; the engine's events
stay the truth, and an expectation they never confirm (a request shed or failed before its
prefill) lapses.

Expectations live in two generations, swapped every window: a key lasts from one to two
windows, and recording a prompt's 100 keys is one C-level set update, not 100 timed entries
(this runs on every routed request).
"""

from __future__ import annotations

from collections.abc import Sequence

WINDOW_S = 10.0
"""The shortest time an unconfirmed expectation counts (the longest is twice it): a queue
wait plus a long prefill under load."""

LIMIT = 1 << 16
"""Most keys one generation holds before it is swapped early (a flood of long unique
prompts must not grow the gateway without bound)."""


class ExpectedBlocks:
    """Block keys sent to one replica and not yet confirmed by its events."""

    __slots__ = ("_current", "_previous", "_since", "limit", "window_s")

    def __init__(self, window_s: float = WINDOW_S, limit: int = LIMIT) -> None:
        self._current: set[int] = set()
        self._previous: set[int] = set()
        self._since = float("-inf")  # when `_current` started
        self.window_s = window_s
        self.limit = limit

    def __len__(self) -> int:
        return len(self._current | self._previous)

    def add(self, keys: Sequence[int], now: float) -> None:
        """Expect `keys` from `now` on."""
        self.age(now)
        self._current.update(keys)
        if len(self._current) > self.limit:
            self._swap(now)

    def age(self, now: float) -> tuple[set[int], set[int]]:
        """The generations still counting at `now` (lapsed ones dropped first)."""
        elapsed = now - self._since
        if elapsed >= 2 * self.window_s:
            self.clear()
            self._since = now
        elif elapsed >= self.window_s:
            # The generations keep their schedule however late they are looked at: a key
            # lapses within two windows of being sent.
            self._previous, self._current = self._current, set()
            self._since += self.window_s
        return self._current, self._previous

    def holds(self, key: int, now: float) -> bool:
        """Whether `key` is expected at `now`."""
        current, previous = self.age(now)
        return key in current or key in previous

    def confirm(self, key: int) -> None:
        """The engine reported the block: its own events track it from now on."""
        self._current.discard(key)
        self._previous.discard(key)

    def clear(self) -> None:
        self._current = set()
        self._previous = set()

    def _swap(self, now: float) -> None:
        self._previous, self._current = self._current, set()
        self._since = now
