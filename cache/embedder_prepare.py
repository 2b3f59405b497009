"""Prepares the semantic cache's models ahead of time (a test run, an image build): the ONNX
export of the embedding model and its int8 copy, and the clause judge's merged model and its
export.

    python -m cache.embedder_prepare [--model DIR] [--cache-dir DIR] [--clause-adapter on|off]

The gateway does the same at startup when they are missing; this moves the wait (~25 s the
first time) out of the first start.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from cache.clause_adapter import adapted_model
from cache.embedder_base import default_model_path
from cache.embedder_store import ensure_export, ensure_int8
from cache.settings import DEFAULT_EMBEDDING_CACHE_DIR


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--model", type=Path, default=None, help="default: all-MiniLM-L6-v2")
    parser.add_argument("--cache-dir", type=Path, default=DEFAULT_EMBEDDING_CACHE_DIR)
    parser.add_argument(
        "--clause-adapter",
        choices=("on", "off"),
        default="on",
        help="also the clause judge's model (GATEWAY_SEMANTIC_CLAUSE_ADAPTER)",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    model = args.model or default_model_path()
    print(ensure_export(model, args.cache_dir))
    print(ensure_int8(model, args.cache_dir))  # for GATEWAY_EMBEDDING_PRECISION=int8
    if args.clause_adapter == "on":
        print(ensure_export(adapted_model(model, args.cache_dir), args.cache_dir))
    return 0


if __name__ == "__main__":
    sys.exit(main())
