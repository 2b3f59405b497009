"""A module-wide stack of real processes: two stand-ins, the OpenAI mock, the gateway."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from standin.vllm.control import ControlClient
from tests.e2e.stack import Stack, control_clients, running_stack


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    # The parse budget (1 s by default) also bounds the body's arrival: a 2-core CI box
    # running the whole suite once took longer than that over a small body: a 408 no test asks for.
    env = {"GATEWAY_BUDGET_TTFT_MS": "3000", "GATEWAY_BUDGET_PARSE_MS": "3000"}
    with running_stack(tmp_path_factory.mktemp("e2e"), env=env) as running:
        yield running


@pytest.fixture
async def sims(stack: Stack) -> AsyncIterator[list[ControlClient]]:
    """Control clients for every stand-in; their faults and counters are reset afterwards."""
    async with control_clients(stack.sim_ports) as clients:
        yield clients
