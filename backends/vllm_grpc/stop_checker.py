"""Trims a sequence's text at the first stop string, streaming-safe.

vLLM stops generating once the decoded text contains a stop string, but the token ids it sends
still cover the whole stop string (and whatever else the last tokens decode to); the gateway
detokenizes those ids itself and must cut the text where vLLM's own server would.

The rule (vLLM `check_stop_strings`): after each engine step vLLM searches the text that step
added (reaching back far enough to catch a stop string straddling the boundary) for each stop
string in request order, and the first one found wins. With one token per step, every match
it can find ends inside that token's text, so the text is cut at the match that ends
earliest; several matches ending in the same token go to the first in request order, even
when a later-listed one ends sooner inside that token. This checker does not know vLLM's step
boundaries (gRPC chunks may merge steps), so it uses the rule that does not depend on them:
the earliest end position in the whole text, ties going to the first stop string in request
order. That agrees with vLLM except when two different stop strings end at different places
inside the text of a single token.

With `include_stop_str=False` the visible text ends right before the stop string, and text
that may be the start of a stop string is held back until the next text decides it (never
letting a client see part of a stop string); with True it ends right after the stop string,
and nothing needs holding back. After a match everything else is dropped. `finish` releases
held-back text when the sequence ends without a match. Empty stop strings are ignored.
"""

from __future__ import annotations

from collections.abc import Sequence


class StopChecker:
    """Per-sequence stop-string state: feed new text, emit what is safe to show."""

    __slots__ = (
        "_firsts",
        "_held",
        "_include",
        "_lookback",
        "_prefixes",
        "_stops",
        "_tail",
        "matched",
    )

    def __init__(self, stops: Sequence[str], include_stop_str: bool = False) -> None:
        self._stops = tuple(s for s in stops if s)
        self._include = include_stop_str
        # Proper prefixes of the stop strings: text ending in one may still become a match.
        self._prefixes = frozenset(s[:k] for s in self._stops for k in range(1, len(s)))
        self._firsts = tuple({p[0] for p in self._prefixes})
        self._lookback = max((len(s) for s in self._stops), default=1) - 1
        self._tail = ""  # the last `_lookback` characters seen, to match across feeds
        self._held = 0  # how many characters at the end of `_tail` are not emitted yet
        self.matched: str | None = None

    def feed(self, text: str, *, check: bool = True) -> tuple[str, bool]:
        """Text safe to emit now, and whether a stop string matched (then nothing follows).

        `check=False` adds text in which no match may end (vLLM does not look for stop
        strings in the first `min_tokens` tokens); a later match may still start in it.
        """
        if self.matched is not None:
            return "", True
        if not text:
            return "", False
        if not self._stops:
            return text, False
        buffer = self._tail + text
        emit_from = len(self._tail) - self._held
        if check:
            cut = self._search(buffer, len(self._tail))
            if cut is not None:
                self._tail, self._held = "", 0
                return buffer[emit_from:cut], True
        emit_to = len(buffer)
        if not self._include:
            emit_to = max(emit_from, emit_to - self._partial_match_length(buffer))
        self._tail = buffer[-self._lookback :] if self._lookback else ""
        self._held = len(buffer) - emit_to
        return buffer[emit_from:emit_to], False

    @property
    def trimmed(self) -> int:
        """How many characters of the matched stop string the text leaves out."""
        return 0 if self.matched is None or self._include else len(self.matched)

    def finish(self) -> str:
        """Release held-back text: the sequence ended without (further) stop strings."""
        if self.matched is not None or not self._held:
            return ""
        held = self._tail[len(self._tail) - self._held :]
        self._held = 0
        return held

    def _search(self, buffer: str, searched: int) -> int | None:
        """Where to cut for the earliest match ending after `searched`, or None."""
        best_end = -1
        best_start = 0
        for stop in self._stops:
            start = buffer.find(stop, max(0, searched - len(stop) + 1))
            if start >= 0 and (best_end < 0 or start + len(stop) < best_end):
                best_end, best_start, self.matched = start + len(stop), start, stop
        if best_end < 0:
            return None
        return best_end if self._include else best_start

    def _partial_match_length(self, buffer: str) -> int:
        """Length of the longest suffix of `buffer` that begins some stop string."""
        window = max(0, len(buffer) - self._lookback)
        longest = 0
        for first in self._firsts:  # C-level scans for where a stop string could begin
            at = buffer.find(first, window)
            while 0 <= at < len(buffer) - longest:
                if buffer[at:] in self._prefixes:
                    longest = len(buffer) - at
                    break
                at = buffer.find(first, at + 1)
        return longest
