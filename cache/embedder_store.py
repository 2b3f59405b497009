"""Where ONNX exports of embedding models live: one directory per model, named by the hash of
the model's files, so an export is made once per model and never outlives a changed model.

`ensure_export` is called on every ONNX load (the gateway's startup). The first load of a
model exports it in a child process (`python -m cache.embedder_export`, which imports torch);
the serving process itself never imports torch. A file lock makes workers that start together
wait for one export instead of each running their own, and a finished export is published by
renaming its directory, so a crash leaves no half-written model behind. `cache.embedder_prepare`
exports ahead of time.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

# Part of every export's directory name: bump it when the exported graph changes.
EXPORT_VERSION = 1
ONNX_FILE = "model.onnx"
INT8_FILE = "model.int8.onnx"  # made beside the export only when asked for (`ensure_int8`)
INT8_META_FILE = "int8.json"
INT8_HINT = (
    " (it needs the onnx package, which `python -m cache.embedder_prepare` has where the export"
    " was made); GATEWAY_EMBEDDING_PRECISION=fp32 skips it"
)
META_FILE = "export.json"
EXPORT_TIMEOUT_S = 900.0
_TMP_PREFIX = ".tmp-"
_CHUNK = 1 << 20


class UnsupportedModel(ValueError):
    """The model's sentence-transformers pipeline is not one the ONNX export reproduces."""


def _json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def check_pipeline(model_dir: Path) -> None:
    """The export covers Transformer -> mean Pooling -> (Normalize) with a fast tokenizer:
    all-MiniLM-L6-v2 and the other mean-pooled sentence-transformers models."""
    hint = "; GATEWAY_EMBEDDING_BACKEND=torch runs it with sentence-transformers instead"
    if not (model_dir / "tokenizer.json").is_file():
        raise UnsupportedModel(f"{model_dir} has no tokenizer.json{hint}")
    modules_file = model_dir / "modules.json"
    if not modules_file.is_file():
        raise UnsupportedModel(f"{model_dir} has no modules.json{hint}")
    modules = _json(modules_file)
    kinds = [str(m.get("type", "")).rsplit(".", 1)[-1] for m in modules]
    if kinds not in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]):
        raise UnsupportedModel(f"{model_dir} has modules {kinds}{hint}")
    if modules[0].get("path", "") != "":
        raise UnsupportedModel(f"{model_dir} keeps its transformer in a subdirectory{hint}")
    pooling = _json(model_dir / modules[1]["path"] / "config.json")
    modes = sorted(k for k, v in pooling.items() if k.startswith("pooling_mode") and v is True)
    if modes != ["pooling_mode_mean_tokens"]:
        raise UnsupportedModel(f"{model_dir} pools with {modes}, not mean tokens{hint}")


def _feed(digest: Any, path: Path) -> None:
    with path.open("rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    _feed(digest, path)
    return digest.hexdigest()


def model_digest(model_dir: Path) -> str:
    """SHA-256 over every file of the model directory, names and contents."""
    digest = hashlib.sha256()
    for path in sorted(p for p in model_dir.rglob("*") if p.is_file()):
        digest.update(path.relative_to(model_dir).as_posix().encode() + b"\0")
        _feed(digest, path)
        digest.update(b"\0")
    return digest.hexdigest()


def export_dir(model_dir: Path, cache_dir: Path) -> Path:
    """The directory an export of `model_dir` lives in (whether or not it exists yet)."""
    return cache_dir / f"v{EXPORT_VERSION}-{model_digest(model_dir)[:32]}"


def is_complete(directory: Path) -> bool:
    return (directory / ONNX_FILE).is_file() and (directory / META_FILE).is_file()


def space_of(onnx_path: Path, precision: str) -> str:
    """The embedding space of an export's model file: the digest of the model directory it
    was exported from (an image files its export under a copy without weights, so the name of
    the export's directory cannot tell two fine-tunes apart), with the precision unless it is
    fp32. Vectors of two spaces must never be compared."""
    meta = _json(onnx_path.parent / META_FILE)
    source = meta.get("source_digest") if isinstance(meta, dict) else None
    digest = source[:32] if isinstance(source, str) else onnx_path.parent.name.split("-", 1)[-1]
    return digest if precision == "fp32" else f"{digest}-{precision}"


def ensure_int8(model_dir: Path, cache_dir: Path) -> Path:
    """The int8 copy of `model_dir`'s export, made first (in a child process, which needs the
    `onnx` package) if this cache has none. Blocks: call it at startup, in a thread."""
    exported = ensure_export(model_dir, cache_dir)
    int8 = exported.with_name(INT8_FILE)
    if int8.is_file():
        return int8
    with locked(cache_dir / f"{exported.parent.name}.lock"):
        if not int8.is_file():
            argv = ["-m", "cache.embedder_quantize", str(model_dir.resolve()), str(int8.parent)]
            _run_child(argv, f"the int8 copy of {model_dir}'s export", INT8_HINT)
    return int8


def ensure_export(model_dir: Path, cache_dir: Path) -> Path:
    """The ONNX file of `model_dir`, exported first if this cache has none. Blocks for as long
    as an export takes (~10-30 s, once per model): call it at startup, in a thread."""
    model_dir = model_dir.resolve()
    check_pipeline(model_dir)
    final = export_dir(model_dir, cache_dir)
    if is_complete(final):
        return final / ONNX_FILE
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OSError(
            f"cannot create the embedding cache {cache_dir} ({exc}); "
            "set GATEWAY_EMBEDDING_CACHE_DIR to a writable directory"
        ) from exc
    with locked(cache_dir / f"{final.name}.lock"):
        if not is_complete(final):  # another worker may have exported while we waited
            _clear_leftovers(cache_dir, final.name)
            shutil.rmtree(final, ignore_errors=True)  # damaged by hand: export it again
            _export_in_child(model_dir, cache_dir, final)
    return final / ONNX_FILE


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    with path.open("a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _clear_leftovers(cache_dir: Path, name: str) -> None:
    """Directories of exports that crashed before publishing (we hold the lock: none is live)."""
    for stale in cache_dir.glob(f"{_TMP_PREFIX}{name}-*"):
        shutil.rmtree(stale, ignore_errors=True)


def _run_child(argv: list[str], what: str, hint: str) -> None:
    """`python argv` with the project importable and the hub offline; RuntimeError naming
    `what`, with `hint` and its last lines, if it fails."""
    project_root = str(Path(__file__).resolve().parent.parent)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [project_root, os.environ.get("PYTHONPATH")])),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
    }
    done = subprocess.run(
        [sys.executable, *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=EXPORT_TIMEOUT_S,
        check=False,
    )
    if done.returncode != 0:
        tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-15:])
        raise RuntimeError(f"{what} failed (exit {done.returncode}){hint}:\n{tail}")


def _export_in_child(model_dir: Path, cache_dir: Path, final: Path) -> None:
    tmp = cache_dir / f"{_TMP_PREFIX}{final.name}-{os.getpid()}"
    tmp.mkdir()
    log.info("exporting %s to ONNX in %s (once per model)", model_dir, final)
    start = time.monotonic()
    try:
        _run_child(
            ["-m", "cache.embedder_export", str(model_dir), str(tmp)],
            f"the ONNX export of {model_dir}",
            "; GATEWAY_EMBEDDING_BACKEND=torch skips it",
        )
        if not is_complete(tmp):
            raise RuntimeError(f"the ONNX export of {model_dir} left no {ONNX_FILE}")
        tmp.rename(final)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    meta = _json(final / META_FILE)
    log.info(
        "exported %s in %.1f s; min cosine similarity to sentence-transformers %.7f",
        model_dir,
        time.monotonic() - start,
        meta.get("min_cosine", float("nan")),
    )
