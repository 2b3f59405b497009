"""A cached answer: what is stored, and how it is replayed as a completion or a stream."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from core.answers import Choice, ChoiceDelta, Completion, StreamChunk, Usage, new_call_id

_FORMAT = 2  # 2: reasoning and reasoning tokens


@dataclass(frozen=True, slots=True)
class CachedAnswer:
    """A complete, successful answer and when it was produced (wall clock, seconds). `key`,
    in a semantic entry, is the exact-cache key of the request it answered, so a semantic hit
    on that very request can restore its exact entry (None in exact entries, and in semantic
    ones stored before it was kept)."""

    completion: Completion
    created_at: float
    key: str | None = None

    def age(self, now: float) -> int:
        return max(0, int(now - self.created_at))

    def to_bytes(self) -> bytes:
        c = self.completion
        return orjson.dumps(
            {
                "v": _FORMAT,
                "ts": self.created_at,
                "fp": c.system_fingerprint,
                "u": [
                    c.usage.prompt_tokens,
                    c.usage.completion_tokens,
                    c.usage.cached_tokens,
                    c.usage.reasoning_tokens,
                ],
                "c": [
                    {
                        "i": ch.index,
                        "t": ch.text,
                        "f": ch.finish_reason,
                        "l": ch.logprobs,
                        "x": ch.tool_calls,
                        "r": ch.reasoning,
                    }
                    for ch in c.choices
                ],
                **({} if self.key is None else {"k": self.key}),
            }
        )

    @classmethod
    def from_bytes(cls, raw: bytes) -> CachedAnswer | None:
        """Decode an entry; None for anything malformed or of another format version. Each
        decoding is an answer to another request: its calls get new ids (see `_fresh_ids`)."""
        try:
            data: Any = orjson.loads(raw)
            if data.get("v") != _FORMAT:
                return None
            prompt, completion, cached, reasoning = data["u"]
            choices = [
                Choice(c["i"], c["t"], c["f"], c["l"], _fresh_ids(c["x"]), c["r"])
                for c in data["c"]
            ]
            usage = Usage(prompt, completion, cached, reasoning)
            key = data.get("k")
            return cls(
                Completion(choices, usage, data["fp"]),
                float(data["ts"]),
                key if isinstance(key, str) else None,
            )
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError):
            return None

    def replay(self) -> list[StreamChunk]:
        """The answer as stream chunks: each choice's whole text, then its finish reason.

        A hit is not billed as generation: the usage chunk reports the original counts, so
        clients see the same usage whether the answer came from cache or not.
        """
        chunks = [
            StreamChunk(
                [
                    ChoiceDelta(
                        c.index,
                        c.text,
                        None,
                        c.logprobs,
                        _indexed(c.tool_calls),
                        reasoning=c.reasoning or "",
                    )
                ]
            )
            for c in self.completion.choices
        ]
        finishes = [
            ChoiceDelta(c.index, "", c.finish_reason, thought=c.reasoning is not None)
            for c in self.completion.choices
        ]
        chunks.append(StreamChunk(finishes, self.completion.usage))
        chunks[0].system_fingerprint = self.completion.system_fingerprint  # holds for the rest
        return chunks


class StreamRecorder:
    """Accumulates a stream's chunks into the answer a cache entry stores."""

    __slots__ = ("_calls", "_fingerprint", "_finish", "_logprobs", "_reasoning", "_texts", "usage")

    def __init__(self) -> None:
        self._texts: dict[int, list[str]] = {}
        self._reasoning: dict[int, list[str]] = {}
        self._calls: dict[int, list[dict[str, Any]]] = {}
        self._finish: dict[int, str] = {}
        self._logprobs: dict[int, list[Any]] = {}
        self._fingerprint: str | None = None
        self.usage: Usage | None = None

    def add(self, chunk: StreamChunk) -> None:
        for delta in chunk.deltas:
            self._texts.setdefault(delta.index, []).append(delta.text)
            if delta.reasoning or delta.thought:
                self._reasoning.setdefault(delta.index, []).append(delta.reasoning)
            if delta.tool_calls:
                _merge_calls(self._calls.setdefault(delta.index, []), delta.tool_calls)
            if delta.logprobs is not None:
                self._logprobs.setdefault(delta.index, []).append(delta.logprobs)
            if delta.finish_reason is not None:
                self._finish[delta.index] = delta.finish_reason
        if chunk.usage is not None:
            self.usage = chunk.usage
        if chunk.system_fingerprint is not None:
            self._fingerprint = chunk.system_fingerprint

    def completion(self) -> Completion | None:
        """The whole answer, or None unless every choice finished (stop, length, or calls)."""
        if not self._texts or self.usage is None:
            return None
        if set(self._finish) != set(self._texts):
            return None
        if any(reason not in ("stop", "length", "tool_calls") for reason in self._finish.values()):
            return None
        choices = [
            Choice(
                i,
                "".join(self._texts[i]),
                self._finish[i],
                _merge_logprobs(self._logprobs.get(i)),
                self._calls.get(i) or None,
                "".join(self._reasoning[i]) if i in self._reasoning else None,
            )
            for i in sorted(self._texts)
        ]
        return Completion(choices, self.usage, self._fingerprint)


def _merge_calls(calls: list[dict[str, Any]], deltas: list[Any]) -> None:
    """Adds streamed call deltas to whole calls: a delta with an id starts a call, one
    without continues the call of its index (a pass-through backend sends fragments)."""
    for delta in deltas:
        function = delta.get("function") or {}
        if delta.get("id") is not None or not calls:
            calls.append(
                {
                    "id": delta.get("id"),
                    "type": delta.get("type", "function"),
                    "function": {
                        "name": function.get("name") or "",
                        "arguments": function.get("arguments") or "",
                    },
                }
            )
            continue
        call = calls[-1]
        position = delta.get("index")
        if isinstance(position, int) and position < len(calls):
            call = calls[position]
        call["function"]["arguments"] += function.get("arguments") or ""


def _fresh_ids(calls: Any) -> Any:
    """A stored answer's calls, just decoded, with new ids of their own (set in place: no
    copy). Clients match a tool's output to its call by id, and OpenAI's ids are unique per
    answer, so no two requests served from one entry share one; a streamed replay carries
    each call whole, so its deltas agree."""
    for call in calls or ():
        call["id"] = new_call_id()
    return calls


def _indexed(calls: list[Any] | None) -> list[Any] | None:
    """Whole calls of a stored answer as the deltas of a stream (each with its index)."""
    if not calls:
        return None
    return [{"index": i, **call} for i, call in enumerate(calls)]


def _merge_logprobs(parts: list[Any] | None) -> Any:
    """Concatenate per-delta OpenAI logprobs objects (chat `content` lists or text arrays)."""
    if not parts:
        return None
    first = parts[0]
    if isinstance(first, dict) and "content" in first:
        return {"content": [item for part in parts for item in (part.get("content") or [])]}
    merged: dict[str, list[Any]] = {}
    for part in parts:
        for name, values in part.items():
            merged.setdefault(name, []).extend(values or [])
    return merged
