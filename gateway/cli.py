"""`gateway serve | sim | mock-openai | bench`."""

from __future__ import annotations

import argparse
import logging
import logging.config
import os
import sys

# Set before anything imports gRPC: these processes fork only to exec (subprocesses, uvicorn
# workers), and gRPC's fork handlers can abort such a child between fork and exec.
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "0")

from gateway.settings import Settings, SettingsError
from obs.logs import log_format_from_env, logging_config
from obs.multiproc import prepare_multiprocess
from obs.tracing_config import record_content, tracing_config


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gateway", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("serve", help="run the HTTP gateway (configured by GATEWAY_* variables)")

    from backends.sim import cli as sim_cli

    sim_cli.add_arguments(commands.add_parser("sim", help="run the vLLM gRPC stand-in"))

    from backends import mock_openai

    mock_openai.add_arguments(
        commands.add_parser("mock-openai", help="run an OpenAI-compatible mock server")
    )

    from bench import main as bench_main

    bench_main.add_arguments(commands.add_parser("bench", help="run the benchmark"))

    args = parser.parse_args(argv)
    if args.command == "serve":
        return serve()
    if args.command == "sim":
        return sim_cli.run(args)
    if args.command == "mock-openai":
        return mock_openai.run(args)
    return bench_main.run(args)


def serve() -> int:
    try:
        settings = Settings.from_env()
        tracing_config(os.environ)  # OTEL_* errors stop the gateway here, not in a worker
        record_content(os.environ)
        log_format = log_format_from_env(os.environ)
    except SettingsError as exc:
        print(f"gateway: invalid configuration: {exc}", file=sys.stderr)
        return 2
    import uvicorn

    prepare_multiprocess(settings.workers)
    log_config = logging_config(settings.log_level, log_format)
    logging.config.dictConfig(log_config)
    uvicorn.run(
        "gateway.app:create_app_from_env",
        factory=True,
        host=settings.host,
        port=settings.port,
        workers=settings.workers,
        loop="uvloop",
        http="httptools",
        log_level=settings.log_level,
        log_config=log_config,
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=30,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
