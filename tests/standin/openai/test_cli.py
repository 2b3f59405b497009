"""The mock OpenAI server's command line: flags default from MOCK_OPENAI_* variables, and
`python -m standin.openai` serves until SIGTERM."""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys

import aiohttp
import pytest

from standin.openai.cli import add_arguments


def test_cli_arguments_default_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each CLI knob takes its default from a MOCK_OPENAI_* variable."""
    monkeypatch.setenv("MOCK_OPENAI_OUTPUT_TOKENS", "99")
    monkeypatch.setenv("MOCK_OPENAI_ITL_MS", "2.5")
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(["--port", "0", "--model", "a", "--model", "b"])
    assert (args.output_tokens, args.itl_ms, args.models, args.port) == (99, 2.5, ["a", "b"], 0)


async def test_cli_serves_until_sigterm() -> None:
    """`python -m standin.openai` prints its URL, serves, and exits 0 on SIGTERM."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "standin.openai", "--port", "0",
        stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert process.stdout is not None
    try:
        async with asyncio.timeout(60):
            line = (await process.stdout.readline()).decode()
            url = line.rsplit(" ", 1)[-1].strip()
            async with aiohttp.ClientSession() as session, session.get(f"{url}/models") as r:
                assert r.status == 200
            process.send_signal(signal.SIGTERM)
            assert await process.wait() == 0
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
