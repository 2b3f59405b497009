"""Progress on stderr: one line per step, stamped with the time since the run started."""

from __future__ import annotations

import sys
import time
from typing import TextIO

from bench.runner import PhaseRecord


class Progress:
    def __init__(self, stream: TextIO | None = None) -> None:
        self._stream = stream or sys.stderr
        self._start = time.monotonic()

    def say(self, message: str) -> None:
        elapsed = time.monotonic() - self._start
        print(f"[bench {elapsed:6.1f}s] {message}", file=self._stream, flush=True)

    def phase(self, index: int, total: int, record: PhaseRecord) -> None:
        res = record.result
        line = (
            f"({index}/{total}) {record.key.label}: {res.throughput:.0f} req/s,"
            f" p50 {res.latency.p50 * 1e3:.2f} ms, p99 {res.latency.p99 * 1e3:.2f} ms"
        )
        if res.ttft.count:
            line += f", ttft p99 {res.ttft.p99 * 1e3:.2f} ms"
        if res.errors:
            line += f", {res.errors} ERRORS"
        self.say(line)
