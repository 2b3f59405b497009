"""Averages clause-judge adapters trained from the same weights (a "model soup").

    python -m bench.clause_soup OUT ADAPTER ADAPTER [ADAPTER ...]

Each adapter is a set of low-rank factors per weight (`cache.clause_adapter`), whose update is
up @ down. The average of n updates is itself low-rank: the down factors stacked and the up
factors placed side by side, each divided by n, so the averaged adapter has rank n x r, merges
like any other, and costs nothing at serving time (the merged model is the same size). The
README reports what averages of two and five adapters did on the labelled sets.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from cache.clause_adapter import BASE_KEY


def average(adapters: Sequence[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """The adapter whose every update is the mean of the `adapters`' updates; ValueError if
    they were trained on different weights or adapt different layers."""
    if len(adapters) < 2:
        raise ValueError("averaging needs at least two adapters")
    bases = {str(parts.get(BASE_KEY, "")) for parts in adapters}
    if len(bases) != 1:
        raise ValueError(f"the adapters were trained on different weights: {sorted(bases)}")
    names = [sorted(k for k in parts if k != BASE_KEY) for parts in adapters]
    if any(keys != names[0] for keys in names):
        raise ValueError("the adapters do not adapt the same layers")
    share = 1.0 / len(adapters)
    averaged: dict[str, np.ndarray] = {}
    for layer in sorted({key.rsplit(".", 1)[0] for key in names[0]}):
        downs = [parts[f"{layer}.a"] for parts in adapters]
        ups = [parts[f"{layer}.b"].astype(np.float32) * share for parts in adapters]
        averaged[f"{layer}.a"] = np.concatenate(downs, axis=0)
        averaged[f"{layer}.b"] = np.concatenate(ups, axis=1).astype(downs[0].dtype)
    if BASE_KEY in adapters[0]:
        averaged[BASE_KEY] = adapters[0][BASE_KEY]
    return averaged


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("adapters", type=Path, nargs="+")
    args = parser.parse_args(argv)
    loaded = []
    for path in args.adapters:
        with np.load(path) as parts:
            loaded.append({key: parts[key] for key in parts.files})
    averaged: dict[str, Any] = average(loaded)
    with args.out.open("wb") as f:
        np.savez(f, **averaged)
    print(f"{args.out}: the average of {len(loaded)} adapters")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
