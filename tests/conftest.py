"""Suite-wide setup that must happen before any test module imports gRPC."""

from __future__ import annotations

import os

# The suite starts servers with subprocess (fork, then exec) while gRPC channels and servers
# run in this process. gRPC's fork handlers restart its poller in the child between fork and
# exec, where close_fds has just closed the poller's epoll descriptor: the child then aborts
# before exec ("epoll_wait error: Bad file descriptor"). Nothing here forks without exec.
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "0")
