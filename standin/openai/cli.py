"""`python -m standin.openai`: the mock OpenAI server's command line, each flag defaulting from
an environment variable (MOCK_OPENAI_<FLAG>); serves until SIGINT or SIGTERM."""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
from typing import Any

from standin.openai.server import MockOpenAIServer

# flag, type, default, help; each default can be overridden by MOCK_OPENAI_<FLAG>.
_OPTIONS: tuple[tuple[str, type[Any], str, str], ...] = (
    ("--host", str, "127.0.0.1", "address to listen on"),
    ("--port", int, "8100", "port to listen on (0: any free port)"),
    ("--output-tokens", int, "16", "words per answer, unless max_tokens is lower"),
    ("--ttft-ms", float, "0", "delay before the first token"),
    ("--itl-ms", float, "0", "delay between tokens"),
    ("--error-status", int, "0", "HTTP status to inject (0: none)"),
    ("--error-rate", float, "0", "share of requests that get the injected status"),
    ("--embedding-dimensions", int, "8", "length of each embedding vector"),
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The CLI knobs; each defaults from an environment variable, e.g. MOCK_OPENAI_ITL_MS."""
    for flag, kind, default, text in _OPTIONS:
        var = "MOCK_OPENAI_" + flag[2:].upper().replace("-", "_")
        value = kind(os.environ.get(var, default))
        parser.add_argument(flag, type=kind, default=value, help=f"{text} (${var})")
    parser.add_argument(
        "--model",
        action="append",
        dest="models",
        help="a model to list; repeatable ($MOCK_OPENAI_MODELS, comma-separated; default: mock)",
    )
    parser.add_argument(
        "--strict-models",
        action="store_true",
        default=os.environ.get("MOCK_OPENAI_STRICT_MODELS", "") not in ("", "0", "false"),
        help="reject unlisted models instead of accepting any ($MOCK_OPENAI_STRICT_MODELS)",
    )


def run(args: argparse.Namespace) -> int:
    """Serve until SIGINT or SIGTERM."""
    server = MockOpenAIServer(
        host=args.host,
        port=args.port,
        models=args.models or env_models(),
        strict_models=args.strict_models,
        output_tokens=args.output_tokens,
        ttft=args.ttft_ms / 1000,
        itl=args.itl_ms / 1000,
        error_status=args.error_status,
        error_rate=args.error_rate,
        embedding_dimensions=args.embedding_dimensions,
    )

    async def serve() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        port = await server.start()
        print(f"mock-openai listening on http://{server.host}:{port}/v1", flush=True)
        await stop.wait()
        await server.stop()

    try:
        import uvloop
    except ImportError:
        asyncio.run(serve())
    else:
        uvloop.run(serve())
    return 0


def env_models() -> list[str]:
    """`MOCK_OPENAI_MODELS`, comma-separated; `mock` when unset."""
    return [m for m in os.environ.get("MOCK_OPENAI_MODELS", "mock").split(",") if m]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m standin.openai", description=__doc__)
    add_arguments(parser)
    return run(parser.parse_args(argv))
