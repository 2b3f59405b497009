"""The soak's request mix: fresh prompts streamed and not, repeated prompts (exact hits),
paraphrased prompts (semantic lookups) and bad requests (4xx), drawn on a fixed seed."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Literal

import orjson

from bench.scenarios.cache.workloads import PARAPHRASES, VOCAB
from bench.servers.start import SIM_MODEL

Kind = Literal["stream", "non-stream", "repeat", "paraphrase", "bad"]
KINDS: tuple[Kind, ...] = ("stream", "non-stream", "repeat", "paraphrase", "bad")
WEIGHTS: dict[Kind, float] = {
    "stream": 0.30,
    "non-stream": 0.25,
    "repeat": 0.20,
    "paraphrase": 0.15,
    "bad": 0.10,
}
REPEATED = 16  # distinct prompts the `repeat` kind cycles through
_OPENERS = ("", "Hi, ", "Hello! ", "Quick question: ", "Excuse me, ")
_CLOSERS = ("", " Thanks.", " Please advise.", " Thank you!", " Cheers.")


@dataclass(frozen=True, slots=True)
class Request:
    """One request to send: its kind, body and whether the answer is an SSE stream."""

    kind: Kind
    body: bytes
    stream: bool


def _chat(text: str, *, stream: bool, max_tokens: int, **extra: Any) -> bytes:
    document: dict[str, Any] = {
        "model": SIM_MODEL,
        "messages": [{"role": "user", "content": text}],
        "temperature": 0,
        "max_tokens": max_tokens,
        "stream": stream,
        **extra,
    }
    return orjson.dumps(document)


def _bad_bodies(max_tokens: int) -> list[bytes]:
    """Requests the gateway must refuse with a 4xx naming the problem."""
    good: dict[str, Any] = {"model": SIM_MODEL, "messages": [{"role": "user", "content": "hi"}]}
    return [
        b'{"model": "sim", "messages": [',  # not JSON
        orjson.dumps({"messages": good["messages"]}),  # no model
        orjson.dumps({**good, "model": "no-such-model"}),
        orjson.dumps({**good, "max_tokens": -max_tokens}),
        orjson.dumps({**good, "temperature": "hot"}),
        orjson.dumps({**good, "messages": []}),
    ]


class Mix:
    """Draws the next request; the same seed always gives the same sequence."""

    def __init__(self, seed: int, max_tokens: int, nonce: str) -> None:
        self._rng = random.Random(seed)
        self._max_tokens = max_tokens
        self._nonce = nonce
        self._count = 0
        self._repeated = [
            f"Soak {nonce}: summarize the history of the {word} in two sentences."
            for word in VOCAB[:REPEATED]
        ]
        self._bad = _bad_bodies(max_tokens)
        self._kinds = list(WEIGHTS)
        self._weights = list(WEIGHTS.values())

    def stored_questions(self) -> list[bytes]:
        """Bodies asked once before the traffic, so paraphrases have something to match."""
        return [_chat(q, stream=False, max_tokens=self._max_tokens) for q, _ in PARAPHRASES]

    def next(self) -> Request:
        self._count += 1
        kind: Kind = self._rng.choices(self._kinds, self._weights)[0]
        rng, n = self._rng, self._max_tokens
        if kind in ("stream", "non-stream"):
            words = " ".join(rng.sample(VOCAB, 6))
            text = f"Soak {self._nonce} #{self._count}: write a short note about {words}."
            return Request(
                kind, _chat(text, stream=kind == "stream", max_tokens=n), kind == "stream"
            )
        if kind == "repeat":
            return Request(
                kind, _chat(rng.choice(self._repeated), stream=False, max_tokens=n), False
            )
        if kind == "paraphrase":
            _, asked = rng.choice(PARAPHRASES)
            text = f"{rng.choice(_OPENERS)}{asked}{rng.choice(_CLOSERS)}"
            return Request(kind, _chat(text, stream=False, max_tokens=n), False)
        return Request(kind, rng.choice(self._bad), False)
