"""SIGHUP ("re-read the key file") before a key registry handles it.

A process-wide signal goes to any thread that does not block it, and a native thread started
at import (OpenBLAS's, by numpy) blocks nothing; with no handler, SIGHUP's default action
ends the whole process. So until the registry's handler is in place a SIGHUP is caught and
remembered (`hold`), the registry re-reads the key file once for it (`take`), and this
thread blocks it as well: a thread it starts, and a worker it spawns, inherit the mask, so a
worker still starting keeps the signal pending until its own registry unblocks it.
"""

from __future__ import annotations

import signal
from types import FrameType

_held = [0]  # SIGHUPs caught before a registry handled them


def hold() -> None:
    """Catch and remember SIGHUP from now on, and block it in this thread."""
    signal.signal(signal.SIGHUP, _remember)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGHUP})


def take() -> bool:
    """Whether a SIGHUP came while held (and forget it)."""
    came, _held[0] = _held[0] > 0, 0
    return came


def _remember(signum: int, frame: FrameType | None) -> None:
    _held[0] += 1
