"""Asyncio tasks per gateway worker, read from GET /metrics.

The soak looks for a gauge `gateway_event_loop_tasks` (len(asyncio.all_tasks()) in each
worker, multiprocess mode "liveall", so each worker's value carries its `pid` label;
`obs.metrics`). A gateway without it (an older build) gets tasks reported as not measured.
"""

from __future__ import annotations

import re

import aiohttp

METRIC = "gateway_event_loop_tasks"
UNLABELLED = 0  # a single-process gateway exports the gauge without a pid label
_LINE = re.compile(rf"^{METRIC}(?:\{{(?P<labels>[^}}]*)\}})?\s+(?P<value>\S+)", re.MULTILINE)
_PID = re.compile(r'pid="(\d+)"')


def parse(text: str) -> dict[int, float]:
    """pid -> tasks from an exposition text; empty when the metric is absent."""
    found: dict[int, float] = {}
    for match in _LINE.finditer(text):
        pid = _PID.search(match.group("labels") or "")
        try:
            found[int(pid.group(1)) if pid else UNLABELLED] = float(match.group("value"))
        except ValueError:
            continue
    return found


async def scrape(session: aiohttp.ClientSession, base_url: str) -> dict[int, float] | None:
    """The tasks per worker pid now; None when /metrics did not answer in time."""
    try:
        async with session.get(
            base_url + "/metrics", timeout=aiohttp.ClientTimeout(total=2.0)
        ) as response:
            if response.status != 200:
                return None
            return parse(await response.text())
    except (TimeoutError, aiohttp.ClientError):
        return None
