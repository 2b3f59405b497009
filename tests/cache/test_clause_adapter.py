"""The clause adapter: merging its low-rank updates, building the merged model once, and the
shipped adapter fitting all-MiniLM-L6-v2."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from cache.clause_adapter import (
    ADAPTER_FILE,
    BASE_KEY,
    MARKER_FILE,
    WEIGHTS_FILE,
    AdapterMismatch,
    adapted_model,
    adapter_deltas,
    clause_dir,
    merge,
    trained_on,
)
from cache.embedder import SentenceEmbedder
from cache.embedder_base import default_model_path
from cache.embedder_store import file_sha256
from cache.semantic_factory import clause_verifier
from cache.settings import CacheSettings
from core.env import SettingsError

LAYER = "encoder.layer.0.attention.self.query"


def _adapter(path: Path, down: Any, up: Any, base: str = "") -> Path:
    parts: dict[str, Any] = {f"{LAYER}.a": np.asarray(down), f"{LAYER}.b": np.asarray(up)}
    if base:
        parts[BASE_KEY] = np.array(base)
    with path.open("wb") as f:
        np.savez(f, **parts)
    return path


def _model(directory: Path, weight: Any) -> Path:
    directory.mkdir(parents=True)
    (directory / "config.json").write_text('{"hidden_size": 3}')
    (directory / "tokenizer.json").write_text("{}")
    tensors = {
        f"{LAYER}.weight": np.asarray(weight, np.float32),
        "other.bias": np.ones(3, np.float32),
    }
    save_file(tensors, str(directory / WEIGHTS_FILE))
    return directory


def test_deltas_are_up_times_down(tmp_path: Path) -> None:
    """Each layer's update is B @ A (the scale is folded into B)."""
    adapter = _adapter(tmp_path / "a.npz", [[1.0, 2.0, 3.0]], [[1.0], [0.0], [-1.0]])
    ((name, delta),) = adapter_deltas(adapter).items()
    assert name == f"{LAYER}.weight"
    assert delta.tolist() == [[1.0, 2.0, 3.0], [0.0, 0.0, 0.0], [-1.0, -2.0, -3.0]]


def test_merge_adds_each_delta_and_keeps_the_rest() -> None:
    """Updated weights change by their delta, in their own dtype; others are untouched."""
    weights = {"w.weight": np.eye(2, dtype=np.float32), "b": np.zeros(2, np.float32)}
    merged = merge(weights, {"w.weight": np.ones((2, 2), np.float32)})
    assert merged["w.weight"].tolist() == [[2.0, 1.0], [1.0, 2.0]]
    assert merged["w.weight"].dtype == np.float32 and merged["b"] is weights["b"]


@pytest.mark.parametrize("weights", [{}, {"w.weight": np.zeros((3, 2), np.float32)}])
def test_merge_refuses_a_delta_the_model_has_no_place_for(weights: dict[str, Any]) -> None:
    """A missing weight or another shape means another model: the message names the weight."""
    with pytest.raises(AdapterMismatch, match=r"w\.weight"):
        merge(weights, {"w.weight": np.ones((2, 2), np.float32)})


def test_adapted_model_is_built_once_per_model_and_adapter(tmp_path: Path) -> None:
    """The merged directory has the model's files, merged weights and a marker; a second call
    reuses it; another adapter gets a directory of its own."""
    model = _model(tmp_path / "model", np.eye(3))
    adapter = _adapter(tmp_path / "a.npz", [[1.0, 0.0, 0.0]], [[0.0], [2.0], [0.0]])
    cache = tmp_path / "cache"
    built = adapted_model(model, cache, adapter)
    assert built == clause_dir(model, cache, adapter)
    assert (built / "config.json").read_text() == '{"hidden_size": 3}'
    assert (built / MARKER_FILE).is_file()
    merged = load_file(str(built / WEIGHTS_FILE))
    assert merged[f"{LAYER}.weight"].tolist() == [[1, 0, 0], [2, 1, 0], [0, 0, 1]]
    assert merged["other.bias"].tolist() == [1, 1, 1]
    stamp = (built / WEIGHTS_FILE).stat().st_mtime_ns
    assert adapted_model(model, cache, adapter) == built
    assert (built / WEIGHTS_FILE).stat().st_mtime_ns == stamp
    other = _adapter(tmp_path / "b.npz", [[0.0, 0.0, 1.0]], [[1.0], [0.0], [0.0]])
    assert adapted_model(model, cache, other) != built
    assert not [p for p in cache.iterdir() if p.name.startswith(".tmp-")]


def test_a_model_without_weights_needs_a_prebuilt_judge(tmp_path: Path) -> None:
    """A weightless model directory (an image's) cannot be merged; without a prebuilt judge
    the error says so."""
    model = _model(tmp_path / "model", np.eye(3))
    (model / WEIGHTS_FILE).unlink()
    adapter = _adapter(tmp_path / "a.npz", [[1.0, 0.0, 0.0]], [[0.0], [2.0], [0.0]])
    with pytest.raises(AdapterMismatch, match=WEIGHTS_FILE):
        adapted_model(model, tmp_path / "cache", adapter)


def test_the_shipped_adapter_fits_minilm() -> None:
    """The shipped adapter names all-MiniLM-L6-v2's weights, and every update lands on one of
    its weights of that shape: six linear layers in each of the six encoder blocks."""
    weights = load_file(str(default_model_path() / WEIGHTS_FILE))
    assert trained_on(ADAPTER_FILE) == file_sha256(default_model_path() / WEIGHTS_FILE)
    deltas = adapter_deltas(ADAPTER_FILE)
    assert len(deltas) == 36
    assert all(weights[name].shape == delta.shape for name, delta in deltas.items())
    assert max(float(np.abs(d).max()) for d in deltas.values()) > 0


def test_another_model_with_the_adapter_on_stops_the_gateway(tmp_path: Path) -> None:
    """A model the adapter does not fit is a misconfiguration naming both variables."""
    model = _model(tmp_path / "model", np.eye(3))
    settings = CacheSettings(embedding_model=str(model), embedding_cache_dir=tmp_path / "cache")
    with pytest.raises(SettingsError, match="GATEWAY_SEMANTIC_CLAUSE_ADAPTER=off"):
        asyncio.run(clause_verifier(settings, embedder=None))  # type: ignore[arg-type]


def test_an_adapter_trained_on_other_weights_is_refused(tmp_path: Path) -> None:
    """A model of the same shapes but other weights (another MiniLM, a fine-tune) is refused
    by the SHA-256 of the weights the adapter names; the right weights are merged."""
    model = _model(tmp_path / "model", np.eye(3))
    weights = model / WEIGHTS_FILE
    wrong = _adapter(tmp_path / "a.npz", [[1.0, 0.0, 0.0]], [[0.0], [2.0], [0.0]], "0" * 64)
    with pytest.raises(AdapterMismatch, match="SHA-256"):
        adapted_model(model, tmp_path / "cache", wrong)
    right = _adapter(
        tmp_path / "b.npz", [[1.0, 0.0, 0.0]], [[0.0], [2.0], [0.0]], file_sha256(weights)
    )
    assert trained_on(right) == file_sha256(weights)
    assert (adapted_model(model, tmp_path / "cache", right) / MARKER_FILE).is_file()


def test_a_crashed_build_is_cleared_and_an_unwritable_cache_is_named(tmp_path: Path) -> None:
    """A build killed halfway leaves a private directory, removed by the next build; a cache
    that cannot be written names GATEWAY_EMBEDDING_CACHE_DIR."""
    model = _model(tmp_path / "model", np.eye(3))
    adapter = _adapter(tmp_path / "a.npz", [[1.0, 0.0, 0.0]], [[0.0], [2.0], [0.0]])
    cache = tmp_path / "cache"
    leftover = cache / f".tmp-{clause_dir(model, cache, adapter).name}-999999"
    leftover.mkdir(parents=True)
    adapted_model(model, cache, adapter)
    assert not leftover.exists()
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    with pytest.raises(OSError, match="GATEWAY_EMBEDDING_CACHE_DIR"):
        adapted_model(model, blocked / "cache", adapter)


def test_each_encoder_runs_on_a_thread_named_for_its_role(
    minilm: SentenceEmbedder, clause_judge: SentenceEmbedder
) -> None:
    """A thread dump tells the prompt embedder from the clause judge."""
    names = {t.name for t in threading.enumerate()}
    assert {"embedder-onnx", "clause-judge-onnx"} <= names
