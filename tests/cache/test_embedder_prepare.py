"""`python -m cache.embedder_prepare`: exports the embedding model and its int8 copy, then the
clause judge's."""

from __future__ import annotations

from pathlib import Path

import pytest

from cache import embedder_prepare


@pytest.mark.parametrize(
    ("flag", "exported"),
    [("on", ["model", "model-int8", "judge"]), ("off", ["model", "model-int8"])],
)
def test_prepares_the_model_and_the_clause_judge_unless_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, flag: str, exported: list[str]
) -> None:
    """Each export lands in the chosen cache, the embedding model's int8 copy beside it;
    `--clause-adapter off` skips the judge."""
    model, judge, calls = tmp_path / "model", tmp_path / "judge", []

    def ensure_export(model_dir: Path, cache_dir: Path) -> Path:
        calls.append((model_dir.name, cache_dir))
        return cache_dir / model_dir.name / "model.onnx"

    def ensure_int8(model_dir: Path, cache_dir: Path) -> Path:
        calls.append((f"{model_dir.name}-int8", cache_dir))
        return cache_dir / model_dir.name / "model.int8.onnx"

    monkeypatch.setattr(embedder_prepare, "ensure_export", ensure_export)
    monkeypatch.setattr(embedder_prepare, "ensure_int8", ensure_int8)
    monkeypatch.setattr(embedder_prepare, "adapted_model", lambda m, c: judge)
    argv = ["--model", str(model), "--cache-dir", str(tmp_path / "c"), "--clause-adapter", flag]
    assert embedder_prepare.main(argv) == 0
    assert calls == [(name, tmp_path / "c") for name in exported]
