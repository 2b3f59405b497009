"""The ONNX backend: equal to sentence-transformers on torch, exported once per model and
offline, served without importing torch, and safe to call from several threads."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from cache import embedder_store
from cache.embedder import SentenceEmbedder
from cache.embedder_base import Matrix, default_model_path
from cache.embedder_export import MIN_COSINE
from cache.embedder_onnx import OnnxEncoder
from cache.embedder_quantize import INT8_MIN_COSINE
from cache.embedder_store import (
    INT8_FILE,
    META_FILE,
    ONNX_FILE,
    UnsupportedModel,
    ensure_export,
    ensure_int8,
    model_digest,
    space_of,
)
from cache.settings import DEFAULT_EMBEDDING_CACHE_DIR

PAIRS = Path(__file__).resolve().parents[1] / "data" / "semantic_pairs.jsonl"
ROOT = Path(__file__).resolve().parents[2]
# Pair similarities may move by this much between backends: far below the 0.01 steps of the
# threshold grid, so every threshold decision on the labelled pairs carries over.
SIMILARITY_TOLERANCE = 1e-5


def _pairs() -> list[tuple[str, str]]:
    lines = PAIRS.read_text(encoding="utf-8").splitlines()
    return [(row["a"], row["b"]) for row in map(json.loads, lines) if row]


@pytest.fixture(scope="module")
def torch_minilm() -> Iterator[SentenceEmbedder]:
    """The same model on sentence-transformers (torch), the reference."""
    embedder = SentenceEmbedder.load(backend="torch", warmup=False)
    yield embedder
    asyncio.run(embedder.aclose())


@pytest.fixture(scope="module")
def onnx_encoder(minilm: SentenceEmbedder) -> OnnxEncoder:
    """The bare encoder behind `minilm` (whose load made sure the export exists)."""
    del minilm
    path = ensure_export(default_model_path(), DEFAULT_EMBEDDING_CACHE_DIR)
    return OnnxEncoder(default_model_path(), path)


async def _embed_all(embedder: SentenceEmbedder, texts: list[str]) -> Matrix:
    """Concurrent embeds (batched by the worker), fewer at a time than the queue holds."""
    rows = []
    for i in range(0, len(texts), 256):
        rows += await asyncio.gather(*map(embedder.embed, texts[i : i + 256]))
    return np.stack(rows)


async def test_onnx_equals_torch_on_the_labelled_pairs(
    minilm: SentenceEmbedder, torch_minilm: SentenceEmbedder
) -> None:
    """Every text of the quality set embeds alike on both backends, and so does every pair's
    similarity: the threshold and the quality numbers carry over."""
    pairs = _pairs()
    texts = sorted({text for pair in pairs for text in pair})
    onnx_rows = await _embed_all(minilm, texts)
    torch_rows = await _embed_all(torch_minilm, texts)
    assert float((onnx_rows * torch_rows).sum(axis=1).min()) >= MIN_COSINE
    row = {text: i for i, text in enumerate(texts)}
    a = np.array([row[x] for x, _ in pairs])
    b = np.array([row[y] for _, y in pairs])
    onnx_sim = (onnx_rows[a] * onnx_rows[b]).sum(axis=1)
    torch_sim = (torch_rows[a] * torch_rows[b]).sum(axis=1)
    assert float(np.abs(onnx_sim - torch_sim).max()) < SIMILARITY_TOLERANCE


@pytest.fixture(scope="module")
def minilm_int8(minilm: SentenceEmbedder) -> Iterator[SentenceEmbedder]:
    """The export's int8 copy (GATEWAY_EMBEDDING_PRECISION=int8), as the gateway loads it."""
    del minilm  # its load made the export
    embedder = SentenceEmbedder.load(precision="int8")
    yield embedder
    asyncio.run(embedder.aclose())


async def test_int8_stays_near_fp32_and_never_depends_on_its_batch(
    minilm: SentenceEmbedder, minilm_int8: SentenceEmbedder
) -> None:
    """The int8 copy embeds every text of the quality set near the fp32 export, in another
    embedding space, and a text embedded among concurrent others gets exactly its vector alone
    (int8 scales activations per batch, so it encodes one distinct text at a time)."""
    texts = sorted({text for pair in _pairs() for text in pair})
    full = await _embed_all(minilm, texts)
    quantized = await _embed_all(minilm_int8, texts)
    assert float((full * quantized).sum(axis=1).min()) >= INT8_MIN_COSINE
    assert minilm_int8.space == f"{minilm.space}-int8"
    alone = [await minilm_int8.embed(text) for text in texts[:32]]
    assert np.array_equal(np.stack(alone), quantized[:32])
    assert minilm_int8.stats.largest_batch == 1


def test_onnx_encoder_is_thread_safe(onnx_encoder: OnnxEncoder) -> None:
    """Threads encoding different batches at once get what each gets alone."""
    batches = [
        [f"Question {t}.{i}: where is order {t * 7 + i}?" for i in range(t + 1)] for t in range(4)
    ]
    alone = [onnx_encoder(batch) for batch in batches]
    results: dict[int, list[Matrix]] = {t: [] for t in range(len(batches))}
    start = threading.Barrier(len(batches))

    def work(t: int) -> None:
        start.wait()
        for _ in range(10):
            results[t].append(onnx_encoder(batches[t]))

    threads = [threading.Thread(target=work, args=(t,)) for t in range(len(batches))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for t, got in results.items():
        assert len(got) == 10
        assert all(np.allclose(m, alone[t], atol=1e-6) for m in got)


def test_serving_imports_no_torch(minilm: SentenceEmbedder) -> None:
    """With the export in place, loading and embedding imports none of torch, transformers or
    sentence-transformers (seconds of import and ~400 MB a worker)."""
    del minilm  # its load made the export
    script = (
        "import asyncio, sys\n"
        "from cache.embedder import SentenceEmbedder\n"
        "async def main():\n"
        "    e = await asyncio.to_thread(SentenceEmbedder.load)\n"
        "    assert (await e.embed('How do I reset my password?')).shape == (384,)\n"
        "    await e.aclose()\n"
        "asyncio.run(main())\n"
        "print(sorted(m for m in ('torch', 'transformers', 'sentence_transformers')"
        " if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_a_fresh_export_is_offline_verified_and_reused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first load exports from the package's files alone (every proxy dead), checks the
    result against sentence-transformers, and later loads reuse it without exporting; the int8
    copy is made beside it only when asked for, checked against it."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.setenv(name, "http://127.0.0.1:9")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    path = ensure_export(default_model_path(), tmp_path)
    assert path.name == ONNX_FILE
    assert (path.parent / f"{ONNX_FILE}.data").is_file()
    meta = json.loads((path.parent / META_FILE).read_text())
    assert meta["min_cosine"] >= MIN_COSINE
    assert space_of(path, "fp32") == model_digest(default_model_path())[:32]
    assert not (path.parent / INT8_FILE).exists()  # made only when int8 is asked for
    int8 = ensure_int8(default_model_path(), tmp_path)
    assert int8 == path.parent / INT8_FILE
    assert json.loads((path.parent / "int8.json").read_text())["min_cosine"] >= INT8_MIN_COSINE
    assert space_of(int8, "int8") == f"{space_of(path, 'fp32')}-int8"
    assert [p.name for p in tmp_path.iterdir() if p.is_dir()] == [path.parent.name]

    def no_export(*args: object, **kwargs: object) -> None:
        raise AssertionError("exported again")

    monkeypatch.setattr(embedder_store, "_export_in_child", no_export)
    assert ensure_export(default_model_path(), tmp_path) == path


def test_concurrent_first_loads_export_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Workers starting together wait for one export and all use it."""
    model = _fake_model(tmp_path / "model")
    exports: list[Path] = []

    def fake_export(model_dir: Path, cache_dir: Path, final: Path) -> None:
        exports.append(final)
        final.mkdir()
        (final / ONNX_FILE).write_bytes(b"graph")
        (final / META_FILE).write_text("{}")

    monkeypatch.setattr(embedder_store, "_export_in_child", fake_export)
    got: list[Path] = []
    threads = [
        threading.Thread(target=lambda: got.append(ensure_export(model, tmp_path / "cache")))
        for _ in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(exports) == 1
    assert got == [exports[0] / ONNX_FILE] * 4


def _fake_model(root: Path, pooling: str = "pooling_mode_mean_tokens") -> Path:
    """A model directory with the files the pipeline check reads (no weights)."""
    (root / "1_Pooling").mkdir(parents=True)
    (root / "tokenizer.json").write_text("{}")
    modules = [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {
            "idx": 1,
            "name": "1",
            "path": "1_Pooling",
            "type": "sentence_transformers.models.Pooling",
        },
    ]
    (root / "modules.json").write_text(json.dumps(modules))
    (root / "1_Pooling" / "config.json").write_text(json.dumps({pooling: True}))
    return root


def test_the_export_is_keyed_by_the_model_files(tmp_path: Path) -> None:
    """Equal files give equal digests wherever they are; any changed byte gives a new one."""
    a = _fake_model(tmp_path / "a")
    b = _fake_model(tmp_path / "b")
    assert model_digest(a) == model_digest(b)
    (b / "tokenizer.json").write_text('{"changed": 1}')
    assert model_digest(a) != model_digest(b)


def test_models_the_export_cannot_reproduce_are_refused(tmp_path: Path) -> None:
    """CLS pooling, or no fast tokenizer, is refused before any export, naming the way out."""
    cls = _fake_model(tmp_path / "cls", pooling="pooling_mode_cls_token")
    with pytest.raises(UnsupportedModel, match="GATEWAY_EMBEDDING_BACKEND=torch"):
        ensure_export(cls, tmp_path / "cache")
    bare = _fake_model(tmp_path / "bare")
    (bare / "tokenizer.json").unlink()
    with pytest.raises(UnsupportedModel, match=r"tokenizer\.json"):
        ensure_export(bare, tmp_path / "cache")
    assert not (tmp_path / "cache").exists()
