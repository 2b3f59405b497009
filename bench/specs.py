"""The phase specs the orchestrator sends to its measuring workers (JSON on a pipe). Kept free
of aiohttp and grpc so the orchestrator never imports them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bench.closed_loop import LoopBounds


@dataclass(frozen=True, slots=True)
class HttpPhase:
    """One measured phase; also the JSON spec the parent sends."""

    url: str
    body: bytes
    stream: bool
    bounds: LoopBounds

    def to_json(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "body": self.body.decode(),
            "stream": self.stream,
            **self.bounds.to_json(),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> HttpPhase:
        return cls(
            url=str(data["url"]),
            body=str(data["body"]).encode(),
            stream=bool(data["stream"]),
            bounds=LoopBounds.from_json(data),
        )


@dataclass(frozen=True, slots=True)
class GrpcPhase:
    """One measured phase; also the JSON spec the parent sends."""

    target: str
    prompt_ids: tuple[int, ...]
    max_tokens: int
    stream: bool
    channels: int
    bounds: LoopBounds

    def to_json(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "prompt_ids": list(self.prompt_ids),
            "max_tokens": self.max_tokens,
            "stream": self.stream,
            "channels": self.channels,
            **self.bounds.to_json(),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> GrpcPhase:
        return cls(
            target=str(data["target"]),
            prompt_ids=tuple(int(i) for i in data["prompt_ids"]),
            max_tokens=int(data["max_tokens"]),
            stream=bool(data["stream"]),
            channels=int(data["channels"]),
            bounds=LoopBounds.from_json(data),
        )
