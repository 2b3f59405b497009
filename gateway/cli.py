"""`gateway serve [--embedded]`: run the HTTP gateway, configured by `GATEWAY_*` variables;
`gateway keys new --tenant T`: a new API key and its key-set entry.

The stand-ins and the benchmark have entry points of their own (`python -m standin.vllm`,
`python -m standin.openai`, `python -m bench`), so starting the gateway imports neither.
"""

from __future__ import annotations

import argparse
import logging
import logging.config
import os
import sys
from collections.abc import MutableMapping

# Set before anything imports gRPC: these processes fork only to exec (subprocesses, uvicorn
# workers), and gRPC's fork handlers can abort such a child between fork and exec.
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "0")

from backends.settings import EMBEDDED
from cache.clause_adapter import check_clause_judge
from gateway import keys_cli
from gateway.drain import DrainSettings
from gateway.preflight import check_machine
from gateway.settings import Settings, SettingsError
from gateway.variables import check_variable_names
from obs.logs import log_format_from_env, logging_config
from obs.multiproc import prepare_multiprocess
from obs.tracing_config import record_content, tracing_config


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gateway", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    serve_parser = commands.add_parser(
        "serve", help="run the HTTP gateway (configured by GATEWAY_* variables)"
    )
    serve_parser.add_argument(
        "--embedded",
        action="store_true",
        help="serve the demo model 'sim' from the built-in vLLM stand-in "
        "(the same as GATEWAY_BACKENDS=embedded)",
    )
    keys_cli.add_arguments(commands.add_parser("keys", help="make API keys for the key set"))
    args = parser.parse_args(argv)
    if args.command == "keys":
        return keys_cli.run(args)
    return serve(embedded=args.embedded)


def serve(*, embedded: bool = False) -> int:
    try:
        check_variable_names(os.environ)
        if embedded:
            _ask_for_embedded(os.environ)
        settings = Settings.from_env()
        if settings.backends.embedded:
            from gateway.app import check_embedded_standin

            check_embedded_standin(os.environ)
        check_machine(settings)  # what the workers need of this machine
        check_clause_judge(settings.cache)  # a misfit stops the gateway before any worker
        tracing_config(os.environ)  # OTEL_* errors stop the gateway here, not in a worker
        record_content(os.environ)
        log_format = log_format_from_env(os.environ)
        drain = DrainSettings.from_env(os.environ)
        prepare_multiprocess(settings.workers)
    except SettingsError as exc:
        print(f"gateway: invalid configuration: {exc}", file=sys.stderr)
        return 2
    from gateway import supervisor  # imports uvicorn

    supervisor.hold_sighup(settings.access.keys_file is not None)  # before the log thread
    log_config = logging_config(settings.log_level, log_format)
    logging.config.dictConfig(log_config)
    if (warning := unshared_state_warning(settings)) is not None:
        logging.getLogger("gateway").warning(warning)
    supervisor.run(
        "gateway.app:create_app_from_env",
        factory=True,
        host=settings.host,
        port=settings.port,
        workers=settings.workers,
        loop="uvloop",
        http="gateway.http_protocol:BoundedHttpToolsProtocol",
        h11_max_incomplete_event_size=settings.max_header_bytes,  # read by that protocol
        head_timeout_s=settings.header_timeout_s,  # and these three (`EdgeConfig`)
        max_connections=settings.max_connections,
        linger_max_bytes=2 * settings.max_body_bytes,
        log_level=settings.log_level,
        log_config=log_config,
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=drain.grace_whole_s,
        stop_within_s=drain.delay_s + drain.grace_s,
        reread_keys_on_hup=settings.access.keys_file is not None,
    )
    return 0


def unshared_state_warning(settings: Settings) -> str | None:
    """What several workers without Redis do not share, or None."""
    if settings.workers == 1 or settings.cache.redis_url:
        return None
    return (
        f"GATEWAY_WORKERS={settings.workers} without GATEWAY_REDIS_URL: each worker keeps its "
        "own caches and stored responses (a previous_response_id made on one worker is "
        "unknown to the others); set GATEWAY_REDIS_URL to share them"
    )


def _ask_for_embedded(environ: MutableMapping[str, str]) -> None:
    """`--embedded` sets GATEWAY_BACKENDS for the workers; it never overrides real servers."""
    current = environ.get("GATEWAY_BACKENDS", "").strip()
    if current and current.lower() != EMBEDDED:
        raise SettingsError(
            "--embedded conflicts with GATEWAY_BACKENDS, which names servers: use one or the other"
        )
    environ["GATEWAY_BACKENDS"] = EMBEDDED


if __name__ == "__main__":
    sys.exit(main())
