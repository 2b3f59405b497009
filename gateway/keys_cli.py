"""`gateway keys new`: a fresh API key, printed once, and the key-set entry that admits it."""

from __future__ import annotations

import argparse
import sys

from access.caller import key_digest
from access.key_set import KeySetError, key_set_entry, new_key, parse_key_set
from budgets.priority import PRIORITIES


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="keys_action", required=True)
    new = actions.add_parser(
        "new",
        help="print a new API key (shown once, stored nowhere) and its key-set entry",
    )
    new.add_argument("--tenant", required=True, help="whose caches, limits and audit trail")
    new.add_argument("--name", default=None, help="a label for operators")
    new.add_argument("--priority", choices=PRIORITIES, default=None, help="highest class")
    new.add_argument("--models", default=None, help="comma-separated models (default: every)")
    for flag in ("requests-per-minute", "tokens-per-minute", "tokens-per-day", "max-tokens"):
        new.add_argument(f"--{flag}", type=int, default=None, metavar="N")


def run(args: argparse.Namespace) -> int:
    key = new_key()
    models = None
    if args.models is not None:
        models = [m.strip() for m in args.models.split(",") if m.strip()]
        if not models:
            print(
                "gateway keys: --models names no model (leave it out for every model)",
                file=sys.stderr,
            )
            return 2
    entry = key_set_entry(
        key_digest(key),
        args.tenant,
        name=args.name,
        priority=args.priority,
        models=models,
        requests_per_minute=args.requests_per_minute,
        tokens_per_minute=args.tokens_per_minute,
        tokens_per_day=args.tokens_per_day,
        max_tokens=args.max_tokens,
    )
    try:
        parse_key_set(f"[{entry}]", "the new entry")  # the same checks the gateway applies
    except KeySetError as exc:
        print(f"gateway keys: {exc}", file=sys.stderr)
        return 2
    print(f"key (shown once; give it to the caller): {key}")
    print(f'entry (add to the key set\'s "keys" list): {entry}')
    return 0
