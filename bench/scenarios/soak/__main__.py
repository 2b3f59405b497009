"""`python -m bench.scenarios.soak`: see bench.scenarios.soak.run."""

from __future__ import annotations

import os

# Subprocesses are started (fork, then exec) from a process that later opens gRPC channels;
# gRPC's fork handlers must stay out of it (see tests/conftest.py).
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "0")

from bench.scenarios.soak.run import main  # after the environment is set

raise SystemExit(main())
