"""Averaging clause adapters: the average's update is the mean of theirs, and adapters of other
weights or layers are refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bench.clause_soup import average, main
from cache.clause_adapter import BASE_KEY, adapter_deltas


def _adapter(
    seed: int, base: str = "abc", layers: tuple[str, ...] = ("l0", "l1")
) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    parts = {BASE_KEY: np.array(base)}
    for layer in layers:
        parts[f"{layer}.a"] = rng.normal(size=(4, 6)).astype(np.float16)
        parts[f"{layer}.b"] = rng.normal(size=(6, 4)).astype(np.float16)
    return parts


def _save(parts: dict[str, Any], path: Path) -> Path:
    with path.open("wb") as f:
        np.savez(f, **parts)
    return path


def test_the_average_update_is_the_mean_of_the_updates(tmp_path: Path) -> None:
    """Merged through `adapter_deltas`, the averaged file adds the mean of the three updates."""
    paths = [_save(_adapter(seed), tmp_path / f"{seed}.npz") for seed in range(3)]
    assert main([str(tmp_path / "avg.npz"), *map(str, paths)]) == 0
    averaged = adapter_deltas(tmp_path / "avg.npz")
    each = [adapter_deltas(path) for path in paths]
    assert sorted(averaged) == ["l0.weight", "l1.weight"]
    for name, delta in averaged.items():
        assert delta.shape == (6, 6)
        np.testing.assert_allclose(delta, sum(d[name] for d in each) / 3, atol=2e-3)
    with np.load(tmp_path / "avg.npz") as parts:
        assert str(parts[BASE_KEY]) == "abc"
        assert parts["l0.a"].shape == (12, 6) and parts["l0.a"].dtype == np.float16


def test_adapters_of_other_weights_or_layers_are_refused() -> None:
    """Averaging needs two adapters of the same weights over the same layers."""
    with pytest.raises(ValueError, match="different weights"):
        average([_adapter(0), _adapter(1, base="def")])
    with pytest.raises(ValueError, match="same layers"):
        average([_adapter(0), _adapter(1, layers=("l0",))])
    with pytest.raises(ValueError, match="at least two"):
        average([_adapter(0)])
