"""The logprobs of a choice with stop strings, held until the text of their tokens is shown.

vLLM's engine keeps every sampled token, so its own server's logprobs cover the tokens of a
matched stop string too (it trims only the text). Here a choice's logprobs cover the tokens
of the text it shows, so that their bytes join into that text and never into a stop string:
text that may begin a stop string is held back (`StopChecker`), and so are the logprobs of its
tokens; a token is released once all of its text is shown, and those holding any of a matched
stop string are dropped with it (one that holds text before it too: the text is then a few
characters longer than its tokens).
"""

from __future__ import annotations

from bisect import bisect_right
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

    def release(self, shown: int, *, ended: bool) -> Positions | None:
        """The positions whose text is all shown once `shown` more characters are; `ended`:
        no more text will be (a stop string matched, or the choice finished), so the others
        are dropped, and so is any position added later."""
        self._shown += shown
        count = bisect_right(self._ends, self._shown)
        taken = (self._ids[:count], self._values[:count], self._tops[:count]) if count else None
        if ended:
            self._ended = True
            count = len(self._ids)
        if count:
            del self._ids[:count], self._values[:count], self._tops[:count], self._ends[:count]
        return taken
