"""A fixed pool of gRPC channels to one vLLM server, each its own TCP connection."""

from __future__ import annotations

import itertools
from typing import Any

import grpc
from smg_grpc_proto.generated import vllm_engine_pb2_grpc

_MAX_MESSAGE_BYTES = 64 * 1024 * 1024

# Keepalive pings are spaced well beyond the server's default minimum interval (5 min with
# no calls, 10 s with calls), so servers never answer GOAWAY too_many_pings.
_CHANNEL_OPTIONS: tuple[tuple[str, Any], ...] = (
    ("grpc.keepalive_time_ms", 30_000),
    ("grpc.keepalive_timeout_ms", 10_000),
    ("grpc.keepalive_permit_without_calls", 0),
    ("grpc.http2.max_pings_without_data", 0),
    ("grpc.max_receive_message_length", _MAX_MESSAGE_BYTES),
    ("grpc.max_send_message_length", _MAX_MESSAGE_BYTES),
    ("grpc.enable_retries", 0),
    # Without a local subchannel pool, channels with equal arguments share one connection.
    ("grpc.use_local_subchannel_pool", 1),
)


class ChannelPool:
    """Round-robins calls over `size` channels; each channel gets distinct arguments."""

    def __init__(self, target: str, size: int) -> None:
        self.target = target
        self._channels = [
            grpc.aio.insecure_channel(
                target, options=[*_CHANNEL_OPTIONS, ("grpc.channel_pool_index", i)]
            )
            for i in range(size)
        ]
        self._stubs = [vllm_engine_pb2_grpc.VllmEngineStub(ch) for ch in self._channels]
        self._next = itertools.cycle(range(size))

    def stub(self) -> vllm_engine_pb2_grpc.VllmEngineStub:
        return self._stubs[next(self._next)]

    def channel(self) -> grpc.aio.Channel:
        """A channel for auxiliary services (health)."""
        return self._channels[0]

    async def close(self) -> None:
        for channel in self._channels:
            await channel.close(grace=None)
