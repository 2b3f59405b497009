"""The gateway image: a pinned slim base, a serving stage without torch or CUDA, non-root with a
health check, the embedding model baked where the gateway looks, workers from the CPU limit,
and a build context that holds what the Dockerfile copies."""

from __future__ import annotations

import fnmatch
import importlib.util
import os
import re
import subprocess
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import orjson
import pytest
from safetensors.numpy import load_file, save_file

from cache import clause_adapter, embedder_store
from tests.deploy.support import DEPLOY, ROOT, readme_variables

DOCKERFILE = ROOT / "Dockerfile"
ENTRYPOINT = DEPLOY / "image" / "entrypoint.sh"
DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")


def _module(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, DEPLOY / "image" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _instructions(path: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    logical, pending = [], ""
    for line in path.read_text(encoding="utf-8").splitlines():
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        pending += line.rstrip("\\").strip() + " "
        if not line.endswith("\\"):
            logical.append(pending.strip())
            pending = ""
    return [(text.split(None, 1)[0].upper(), text.split(None, 1)[1]) for text in logical]


def _stages() -> dict[str, list[tuple[str, str]]]:
    """Each stage's instructions by its name (the last, unnamed one is "final")."""
    stages: dict[str, list[tuple[str, str]]] = {"": []}
    current = ""
    for instruction, args in _instructions(DOCKERFILE):
        if instruction == "FROM":
            parts = args.split()
            current = parts[2] if len(parts) == 3 and parts[1].upper() == "AS" else "final"
            stages[current] = []
        stages[current].append((instruction, args))
    return stages


def _env(stage: list[tuple[str, str]]) -> dict[str, str]:
    env: dict[str, str] = {}
    for instruction, args in stage:
        if instruction == "ENV":
            env.update(re.findall(r"(\w+)=(\S+)", args))
    return env


def test_base_image_is_pinned_by_digest() -> None:
    """Every stage starts from one base: a full CPython version on slim Debian, with a digest."""
    stages = _stages()
    (default,) = [args for instr, args in stages[""] if instr == "ARG"]
    name, image = default.split("=", 1)
    assert re.fullmatch(r"python:3\.11\.\d+-slim-[a-z]+", image.split("@")[0]), image
    assert DIGEST.search(image), image
    for stage in list(stages.values())[1:]:
        source = stage[0][1].split()[0]
        assert source == f"${{{name}}}" or source in stages, source


def test_final_stage_runs_unprivileged_with_a_health_check() -> None:
    """A numeric non-root USER, a HEALTHCHECK on /healthz, the entrypoint that picks workers."""
    final = dict(_stages()["final"])
    uid = final["USER"].split(":")[0]
    assert uid.isdigit() and int(uid) != 0
    assert "/healthz" in final["HEALTHCHECK"]
    entrypoint = orjson.loads(final["ENTRYPOINT"])
    assert entrypoint == ["/bin/sh", "/usr/local/bin/gateway-entrypoint"]
    assert any(
        args.endswith(entrypoint[-1]) for instr, args in _stages()["final"] if instr == "COPY"
    )
    assert orjson.loads(final["CMD"]) == ["serve"]


def test_serving_stages_install_no_torch() -> None:
    """The final stage copies a venv of ONNX Runtime and RedisVL pins, no torch or CUDA."""
    stages = _stages()
    final = stages["final"]
    assert not any(instr == "RUN" and "pip" in args for instr, args in final)
    copies = [args.split() for instr, args in final if instr == "COPY" and "--from" in args]
    assert sorted(tuple(c) for c in copies) == [
        ("--from=export", "/opt/llm-gateway", "/opt/llm-gateway"),
        ("--from=venv", "/opt/venv", "/opt/venv"),
    ]
    assert any("/wheels/serve.txt" in args for instr, args in stages["venv"] if instr == "RUN")
    requirements = _module("requirements")
    serve = requirements.serve()
    names = {requirements.name_of(r) for r in serve}
    assert {"onnxruntime", "redisvl"} <= names
    assert not names & {"torch", "sentence-transformers", "transformers", "onnx"}
    assert not any(name.startswith("nvidia") for name in names)
    assert all(re.fullmatch(r"[A-Za-z0-9._-]+==[\w.]+", r) for r in serve)
    assert requirements.torch()[0].startswith("torch==")


def test_image_environment_points_at_the_baked_model() -> None:
    """The image's variables name the baked model, /tmp paths and documented names only."""
    stages = _stages()
    env = _env(stages["final"])
    (bake,) = [args for instr, args in stages["export"] if "bake_embedder.py" in args]
    assert bake.split()[-2:] == [env["GATEWAY_EMBEDDING_MODEL"], env["GATEWAY_EMBEDDING_CACHE_DIR"]]
    assert env["GATEWAY_TOKENIZER_CACHE_DIR"].startswith("/tmp/")
    assert env["HOME"] == "/tmp"
    gateway = sorted(name for name in env if name.startswith("GATEWAY_"))
    assert [name for name in gateway if name not in readme_variables()] == []


def _ignored(path: str, patterns: list[str]) -> bool:
    """Docker's rule: the last matching pattern wins; a pattern also covers what is under it."""
    ignored = False
    for pattern in patterns:
        negated = pattern.startswith("!")
        pattern = pattern.lstrip("!").rstrip("/")
        parts = path.split("/")
        prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
        if any(fnmatch.fnmatch(prefix, pattern) for prefix in prefixes):
            ignored = not negated
    return ignored


def test_build_context_holds_what_the_dockerfile_copies() -> None:
    """Each path the Dockerfile copies from the context passes .dockerignore, the rest does not."""
    patterns = [
        line.strip()
        for line in (ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    ]
    copied = [
        source
        for instr, args in _instructions(DOCKERFILE)
        if instr == "COPY" and "--from" not in args
        for source in args.split()[:-1]
    ]
    assert "core" in copied
    assert [path for path in copied if _ignored(path, patterns)] == []
    for path in (".venv/bin/python", "tests/conftest.py", ".git/HEAD", "bench/results/x.md"):
        assert _ignored(path, patterns), path
    assert _ignored("cache/__pycache__/keys.cpython-311.pyc", patterns)


V1_QUOTA, V1_PERIOD = "cpu/cpu.cfs_quota_us", "cpu/cpu.cfs_period_us"
CGROUP_CASES = [
    ("v2, no limit", {"cpu.max": "max 100000"}, None, None),
    ("v2, two CPUs", {"cpu.max": "200000 100000"}, None, 2),
    ("v2, 1.5 CPUs rounds down", {"cpu.max": "150000 100000"}, None, 1),
    ("v2, half a CPU", {"cpu.max": "50000 100000"}, None, 1),
    ("v1, no limit", {V1_QUOTA: "-1", V1_PERIOD: "100000"}, None, None),
    ("v1, four CPUs", {V1_QUOTA: "400000", V1_PERIOD: "100000"}, None, 4),
    ("no cgroup files", {}, None, None),
    ("set wins over the limit", {"cpu.max": "200000 100000"}, "3", 3),
    ("empty is unset", {}, "", None),
]


@pytest.mark.parametrize(
    ("files", "preset", "expected"),
    [case[1:] for case in CGROUP_CASES],
    ids=[case[0] for case in CGROUP_CASES],
)
def test_entrypoint_takes_workers_from_the_cpu_limit(
    tmp_path: Path, files: dict[str, str], preset: str | None, expected: int | None
) -> None:
    """Workers: whole CPUs of the limit (1 to usable CPUs); no limit: unset; set: kept."""
    cgroup = tmp_path / "cgroup"
    for name, content in files.items():
        (cgroup / name).parent.mkdir(parents=True, exist_ok=True)
        (cgroup / name).write_text(content + "\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "gateway"
    fake.write_text('#!/bin/sh\necho "${GATEWAY_WORKERS-unset} $*"\n')
    fake.chmod(0o755)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "CGROUP_ROOT": str(cgroup)}
    if preset is not None:
        env["GATEWAY_WORKERS"] = preset
    done = subprocess.run(
        ["sh", str(ENTRYPOINT), "serve", "--embedded"],
        env=env,
        capture_output=True,
        text=True,
        timeout=10,
        check=True,
    )
    cpus = len(os.sched_getaffinity(0))
    if expected is not None and preset is None:
        expected = min(expected, cpus)
    assert done.stdout.split() == [str(expected) if expected else "unset", "serve", "--embedded"]


def _fake_model(directory: Path) -> Path:
    (directory / "1_Pooling").mkdir(parents=True)
    modules = [
        {"path": "", "type": "sentence_transformers.models.Transformer"},
        {"path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
    ]
    (directory / "modules.json").write_bytes(orjson.dumps(modules))
    (directory / "1_Pooling" / "config.json").write_bytes(
        orjson.dumps({"pooling_mode_mean_tokens": True, "pooling_mode_cls_token": False})
    )
    (directory / "tokenizer.json").write_text("{}")
    (directory / "config.json").write_text("{}")
    weights = {f"{LAYER}.weight": np.eye(4, dtype=np.float32)}
    save_file(weights, str(directory / "model.safetensors"))
    return directory


LAYER = "encoder.layer.0.attention.self.query"


def _tiny_adapter(path: Path) -> Path:
    """A rank-1 adapter for the fake model's one 4x4 weight."""
    parts: dict[str, Any] = {f"{LAYER}.a": np.ones((1, 4)), f"{LAYER}.b": np.ones((4, 1))}
    with path.open("wb") as f:
        np.savez(f, **parts)
    return path


def test_bake_files_the_exports_where_the_gateway_looks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The gateway's own lookups find both baked exports, the embedding model's and the clause
    judge's, from weightless directories only."""
    source = _fake_model(tmp_path / "source")
    adapter = _tiny_adapter(tmp_path / "adapter.npz")
    real_ensure = embedder_store.ensure_export
    exported: list[dict[str, np.ndarray]] = []

    def fake_ensure(model_dir: Path, cache_dir: Path) -> Any:
        if not (Path(model_dir) / "model.safetensors").is_file():
            return real_ensure(model_dir, cache_dir)
        exported.append(load_file(str(Path(model_dir) / "model.safetensors")))
        final = embedder_store.export_dir(Path(model_dir).resolve(), cache_dir)
        final.mkdir(parents=True)
        (final / embedder_store.ONNX_FILE).write_bytes(str(model_dir).encode())
        (final / embedder_store.META_FILE).write_text("{}")
        return final / embedder_store.ONNX_FILE

    monkeypatch.setattr(embedder_store, "ensure_export", fake_ensure)
    model_out, cache_out = tmp_path / "image" / "model", tmp_path / "image" / "embeddings"
    embedding, clause = _module("bake_embedder").bake(model_out, cache_out, source, adapter)
    assert not (model_out / "model.safetensors").exists()
    assert (model_out / "tokenizer.json").is_file() and (model_out / "1_Pooling").is_dir()
    assert embedding.read_bytes() == str(source.resolve()).encode()
    assert real_ensure(model_out, cache_out) == embedding
    clause_out = clause_adapter.adapted_model(model_out, cache_out, adapter)
    assert not (clause_out / "model.safetensors").exists()
    assert clause is not None and real_ensure(clause_out, cache_out) == clause
    assert np.allclose(exported[1][f"{LAYER}.weight"], np.eye(4) + np.ones((4, 4)))
    assert sorted(p.name for p in cache_out.iterdir()) == sorted(
        [embedding.parent.name, clause.parent.name, clause_out.name]
    )
