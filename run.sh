#!/usr/bin/env bash
# Sets up a virtualenv with everything the project needs, then runs the gateway or the tests.
#   ./run.sh serve   the gateway on embedded defaults (built-in vLLM stand-in, no GPU)
#   ./run.sh test    lint, type-check and the whole test suite
set -euo pipefail
cd "$(dirname "$0")"

VENV=.venv
PYTHON=${PYTHON:-python3}

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
    echo "run.sh: need root to run: $*" >&2; exit 1; fi
}

ensure_python() {
  if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    echo "run.sh: Python 3.11+ is required (found: $("$PYTHON" --version 2>&1 || echo none))" >&2
    exit 1
  fi
  if ! "$PYTHON" -c 'import venv, ensurepip' 2>/dev/null; then
    echo "run.sh: installing python3-venv" >&2
    as_root apt-get update -qq
    as_root apt-get install -y -qq python3-venv >/dev/null
  fi
}

ensure_test_tools() {
  # wrk drives the benchmark's peak-throughput phases, which the suite's smoke runs cover.
  if ! command -v wrk >/dev/null; then
    echo "run.sh: installing wrk" >&2
    as_root apt-get update -qq
    as_root apt-get install -y -qq wrk >/dev/null
  fi
}

ensure_venv() {
  ensure_python
  [ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
  local stamp
  stamp="$VENV/.installed-$(cat pyproject.toml | sha256sum | cut -c1-16)-$1"
  if [ ! -f "$stamp" ]; then
    "$VENV/bin/python" -m pip install -q --upgrade pip
    case "$1" in
      *semantic*) "$VENV/bin/python" -m pip install -q "torch==2.13.0" ;;  # CPU build, before anything asks for torch
    esac
    if [ -n "$1" ]; then
      "$VENV/bin/python" -m pip install -q -e ".[$1]"
    else
      "$VENV/bin/python" -m pip install -q -e .
    fi
    touch "$stamp"
  fi
}

case "${1:-}" in
  serve)
    ensure_venv ""
    exec "$VENV/bin/gateway" serve --embedded
    ;;
  test)
    ensure_test_tools
    ensure_venv dev,bench,semantic
    export PATH="$PWD/$VENV/bin:$PATH"
    # The semantic cache's ONNX exports (the embedding model and the clause judge), made once (~25 s)
    # here rather than inside the first test that starts a gateway.
    python -m cache.embedder_prepare >/dev/null
    echo "== ruff" && ruff check . && ruff format --check .
    echo "== mypy" && mypy
    echo "== pytest" && exec pytest -q -p no:cacheprovider "${@:2}"
    ;;
  *)
    echo "usage: ./run.sh serve | test [pytest args]" >&2
    exit 2
    ;;
esac
