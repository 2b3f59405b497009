"""The logprobs of a chat choice's content tokens (or of a choice's shown text), held until
the text of their tokens is shown.

vLLM's engine keeps every sampled token, and its own server's logprobs list them all: the
tokens of a matched stop string (it trims only the text), a reasoning model's thinking and the
markup of its tool calls (its parsers split the text, not the logprobs). Here a choice's
logprobs cover exactly the tokens whose text it shows as its text (chat: its `content`), so
that their bytes join into that text: the decoder says which characters of the decoded output
went there (`show`), in order, and a token is released once all of its characters have; a
token any of whose characters went elsewhere (a stop string, the thinking, a call's markup,
newlines a parser dropped) is dropped, one that straddles the boundary included (the text is
then a few characters longer than its tokens, as where a token holds both text and the start
of a stop string). A token that decoded to nothing (the first bytes of a character another
token completes) shares the fate of the character that follows it; where the output ends
before any follows (the bytes of a character the answer was cut inside), of the character
before it, or, in an output of no characters, of its start (shown unless it is thinking), so
that an answer's last tokens are listed whether or not a stop list made them wait.

Where a stop string ended the answer, vLLM's list is followed: its tokens are listed up to
the one that completed it (whose text may run past the stop string's end: only its characters
before that end must be shown or the stop string's), none after, so that an answer a stop
string cut inside its first token still has that token's logprob. The stop token the engine
ended on (an EOS, a `stop_token_ids` entry) is never held: its text is hidden, and so is its
logprob (vLLM lists it).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from typing import Any

from backends.text_origin import WRITTEN, Piece

Positions = tuple[list[int], list[float], list[Any]]  # token ids, logprobs, top alternatives


class HeldLogprobs:
    """Logprob positions not decided yet, each with the characters its token decoded to."""

    __slots__ = (
        "_ended",
        "_ends",
        "_fed",
        "_first",
        "_ids",
        "_reach",
        "_shown",
        "_spans",
        "_tops",
        "_values",
    )

    def __init__(self) -> None:
        self._ids: list[int] = []
        self._values: list[float] = []
        self._tops: list[Any] = []
        self._ends: list[int] = []  # characters decoded up to the end of each held token
        self._fed = 0  # characters the output so far decoded to
        self._first = 0  # where the first held token's characters start
        self._spans: deque[list[int]] = deque()  # shown characters: [start, end), merged
        self._reach = 0  # the end of the last shown character: nothing before it will be
        self._shown = 0  # characters shown by `release`
        self._ended = False

    @property
    def holding(self) -> bool:
        """Some position is still undecided."""
        return bool(self._ids)

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

    def flushed(self, length: int) -> None:
        """`length` more characters of the output that no new token brought: the text the
        detokenizer held back for a character left unfinished, released at the end."""
        self._fed += length

    def show(
        self,
        pieces: Iterable[Piece],
        *,
        ended: bool,
        stop: Piece | None = None,
        thinking: bool = False,
    ) -> Positions | None:
        """The positions decided to be shown once the output's characters in `pieces`
        (`(start, length)`, after those shown before) are; `ended`: no more will be (a stop
        string matched, or the choice finished), so every other position is dropped, and so
        is any added later. `stop`: the matched stop string's characters (`(start, length)`,
        length 0 where the text shows it), listed up to the token that completed it.
        `thinking`: the output ended inside the thinking."""
        spans = self._spans
        for start, length in pieces:
            if length <= 0 or start == WRITTEN:  # written by a parser: no token's
                continue
            end = start + length
            if spans and spans[-1][1] == start:
                spans[-1][1] = end
            else:
                spans.append([start, end])
            self._reach = end
        stop_end = None
        if stop is not None and stop[0] == self._reach:  # the text before it was shown
            stop_end = stop[0] + stop[1]
            if stop[1] > 0:
                if spans and spans[-1][1] == stop[0]:
                    spans[-1][1] = stop_end
                else:
                    spans.append([stop[0], stop_end])
                self._reach = stop_end
        # Empty tokens at the output's end go with the character before them (none: with its
        # start), never after a matched stop string.
        tail = ended and stop is None and not thinking and self._reach == self._fed
        taken = self._decide(ended, stop_end, tail)
        if ended:
            self._ended = True
            del self._ids[:], self._values[:], self._tops[:], self._ends[:]
            spans.clear()
        return taken

    def _decide(self, ended: bool, stop_end: int | None, tail: bool) -> Positions | None:
        """Takes the decided positions off the front; returns those that are shown (`tail`:
        with the empty tokens at the output's end)."""
        spans, ends = self._spans, self._ends
        ids: list[int] = []
        values: list[float] = []
        tops: list[Any] = []
        start, count = self._first, 0
        for end in ends:
            last = end if end > start else start + 1  # an empty token: the next character
            if stop_end is not None and start < stop_end < last:
                last = stop_end  # it completed the stop string: what follows does not count
            if last > self._reach and not ended:
                break
            while spans and spans[0][1] <= start:
                spans.popleft()
            if (spans and spans[0][0] <= start and last <= spans[0][1]) or (
                tail and start == self._fed
            ):
                ids.append(self._ids[count])
                values.append(self._values[count])
                tops.append(self._tops[count])
            count += 1
            start = end
        if count:
            del self._ids[:count], self._values[:count], self._tops[:count], ends[:count]
            self._first = start
        return (ids, values, tops) if ids else None
