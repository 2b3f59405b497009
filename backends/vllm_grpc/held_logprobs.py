"""The logprobs of a choice with stop strings, held until the text of their tokens is shown.

vLLM's engine keeps every sampled token and its server lists them all in the logprobs, up to
the one that completed a stop string (it trims only the text). So does this gateway, while
streaming no token's logprob before its text: text that may begin a stop string is held back
(`StopChecker`), and so are the logprobs of its tokens; a token is released once all of its
text is shown. When a stop string matches, the tokens up to the one whose text completed it
are released (their text then runs past the shown text: the trimmed stop string, or the rest
of a token the stop string ends inside) and any later token is dropped; when the choice
finishes, every token held is released.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from typing import Any

Positions = tuple[list[int], list[float], list[Any]]  # token ids, logprobs, top alternatives


class HeldLogprobs:
    """Logprob positions not shown yet, each with where its token's text ends."""

    __slots__ = ("_ended", "_ends", "_fed", "_ids", "_shown", "_tops", "_values")

    def __init__(self) -> None:
        self._ids: list[int] = []
        self._values: list[float] = []
        self._tops: list[Any] = []
        self._ends: list[int] = []  # characters decoded up to the end of each held token
        self._fed = 0  # characters the tokens so far decoded to
        self._shown = 0  # characters of those that were shown
        self._ended = False

    def add(self, output_logprobs: Any, lengths: Sequence[int]) -> None:
        """The first `len(lengths)` positions of `OutputLogProbs`, whose tokens decoded to
        `lengths` characters each."""
        if self._ended:
            return
        count = len(lengths)
        tops = output_logprobs.top_logprobs
        self._ids.extend(output_logprobs.token_ids[:count])
        self._values.extend(output_logprobs.token_logprobs[:count])
        self._tops.extend(tops[i] if i < len(tops) else None for i in range(count))
        for length in lengths:
            self._fed += length
            self._ends.append(self._fed)

    def release(self, shown: int, *, ended: bool, stop_past: int | None = None) -> Positions | None:
        """The positions whose text is all shown once `shown` more characters are. `ended`:
        no more text will be, so every position held is released, and any added later is
        dropped; but where a stop string matched, ending `stop_past` characters past the
        shown text (0 where it is shown), only those up to the token that completed it."""
        self._shown += shown
        if not ended:
            count = bisect_right(self._ends, self._shown)
        else:
            self._ended = True
            count = len(self._ids)
            if stop_past is not None:
                count = min(count, bisect_left(self._ends, self._shown + stop_past) + 1)
        taken = (self._ids[:count], self._values[:count], self._tops[:count]) if count else None
        if ended:
            count = len(self._ids)
        if count:
            del self._ids[:count], self._values[:count], self._tops[:count], self._ends[:count]
        return taken
