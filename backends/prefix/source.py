"""What a backend offers prefix-aware routing: its KV event stream and a prompt's token ids."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, Protocol, runtime_checkable

from backends.base import GenerationRequest


@runtime_checkable
class PrefixSource(Protocol):
    """A backend that publishes KV events and tokenizes prompts the way its server does."""

    def kv_events(self) -> AsyncIterator[Any]: ...

    async def block_size(self) -> int: ...

    async def prompt_ids(self, request: GenerationRequest) -> list[int]: ...
