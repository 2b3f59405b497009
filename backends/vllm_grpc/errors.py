"""Maps gRPC status codes from vLLM onto the gateway's error hierarchy."""

from __future__ import annotations

import grpc

from budgets.deadline import Deadline
from core.backend_errors import BackendError, BackendOverloaded, BackendRejected, BackendUnavailable
from core.errors import DeadlineExceeded, GatewayError

_REJECTED = {grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.OUT_OF_RANGE}
_UNREACHABLE = {grpc.StatusCode.UNAVAILABLE}


def map_rpc_error(exc: grpc.aio.AioRpcError, url: str, deadline: Deadline) -> GatewayError:
    code = exc.code()
    details = exc.details() or code.name
    if code in _REJECTED:
        return BackendRejected(details)
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        return DeadlineExceeded(deadline.stage)
    if code == grpc.StatusCode.RESOURCE_EXHAUSTED and "larger than max" not in details:
        # The engine's queue is full. (gRPC also says RESOURCE_EXHAUSTED for a message over
        # its size limit: that is no overload, and stays a backend error.)
        return BackendOverloaded(f"overloaded: {details}", replica=url)
    if code in _UNREACHABLE:
        return BackendUnavailable(f"unavailable: {details}", replica=url)
    return BackendError(f"failed with {code.name}: {details}", replica=url)
