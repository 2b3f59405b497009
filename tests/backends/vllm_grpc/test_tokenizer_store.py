"""Fetching the tokenizer over a real gRPC channel, caching it, and loading the bundle."""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import zipfile
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import grpc.aio
import pytest
from smg_grpc_proto.generated import common_pb2, vllm_engine_pb2_grpc
from transformers import PreTrainedTokenizerFast

from backends.vllm_grpc.tokenizer_fetch import fetch_tokenizer_dir
from backends.vllm_grpc.tokenizer_store import TokenizerFetchError, load_tokenizer_bundle
from standin.vllm.tokenizer_files import tokenizer_dir

CHUNK = 1000


def zip_dir(directory: Path) -> bytes:
    """The server's archive: every file of `directory` under its plain name."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(directory.iterdir()):
            archive.write(path, path.name)
    return buffer.getvalue()


def zip_entries(entries: dict[str, bytes]) -> bytes:
    """An archive with arbitrary (possibly hostile) entry names."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def chunks(data: bytes, sha256: str) -> Iterator[Any]:
    """GetTokenizerChunk messages; the digest rides on the last one only."""
    for start in range(0, len(data), CHUNK):
        last = start + CHUNK >= len(data)
        yield common_pb2.GetTokenizerChunk(
            data=data[start : start + CHUNK], sha256=sha256 if last else ""
        )


def tree(root: Path) -> list[str]:
    """Every path under `root`, relative to it."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


@dataclass
class Archive:
    """What the test server streams next."""

    data: bytes
    sha256: str
    fail: bool = False
    calls: int = 0


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[tuple[Any, Archive]]:
    """A grpc.aio server on 127.0.0.1:0 serving only GetTokenizer, and a stub to it."""
    data = zip_dir(tokenizer_dir())
    archive = Archive(data, hashlib.sha256(data).hexdigest())

    async def get_tokenizer(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
        archive.calls += 1
        if archive.fail:
            await context.abort(grpc.StatusCode.INTERNAL, "tokenizer files are missing")
        for chunk in chunks(archive.data, archive.sha256):
            yield chunk

    handler = grpc.unary_stream_rpc_method_handler(
        get_tokenizer,
        request_deserializer=common_pb2.GetTokenizerRequest.FromString,
        response_serializer=common_pb2.GetTokenizerChunk.SerializeToString,
    )
    server = grpc.aio.server()
    server.add_generic_rpc_handlers(
        (
            grpc.method_handlers_generic_handler(
                "vllm.grpc.engine.VllmEngine", {"GetTokenizer": handler}
            ),
        )
    )
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
    try:
        yield vllm_engine_pb2_grpc.VllmEngineStub(channel), archive
    finally:
        await channel.close(None)
        await server.stop(None)


async def test_fetch_unpacks_into_a_directory_named_by_hash(
    served: tuple[Any, Archive], tmp_path: Path
) -> None:
    """The zip arrives in chunks, is verified and unpacked to cache_root/<sha256>."""
    stub, archive = served
    directory = await fetch_tokenizer_dir(stub, tmp_path / "cache", timeout=10)
    assert directory == tmp_path / "cache" / archive.sha256
    source = tokenizer_dir()
    assert sorted(p.name for p in directory.iterdir()) == sorted(p.name for p in source.iterdir())
    for path in source.iterdir():
        assert (directory / path.name).read_bytes() == path.read_bytes()
    assert [p.name for p in (tmp_path / "cache").iterdir()] == [archive.sha256]


async def test_second_fetch_reuses_the_directory(
    served: tuple[Any, Archive], tmp_path: Path
) -> None:
    """A cached directory is reused as is (downloaded again only to learn the hash)."""
    stub, archive = served
    first = await fetch_tokenizer_dir(stub, tmp_path, timeout=10)
    (first / "marker").write_text("kept")
    second = await fetch_tokenizer_dir(stub, tmp_path, timeout=10)
    assert second == first
    assert (second / "marker").read_text() == "kept"
    assert archive.calls == 2


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda a: setattr(a, "sha256", "0" * 64), "SHA-256"),
        (lambda a: setattr(a, "sha256", ""), "no SHA-256"),
        (lambda a: setattr(a, "data", b""), "no data"),
        (lambda a: setattr(a, "fail", True), "INTERNAL"),
    ],
    ids=["bad-sha", "missing-sha", "empty", "rpc-error"],
)
async def test_bad_downloads_raise_and_leave_nothing(
    served: tuple[Any, Archive],
    tmp_path: Path,
    mutate: Callable[[Archive], None],
    message: str,
) -> None:
    """A wrong or missing digest, no data, or an RPC error raise TokenizerFetchError."""
    stub, archive = served
    mutate(archive)
    with pytest.raises(TokenizerFetchError, match=message):
        await fetch_tokenizer_dir(stub, tmp_path / "cache", timeout=10)
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").iterdir())


@pytest.mark.parametrize(
    "name", ["../escape.json", "/etc/passwd-copy", "sub/dir.json", "a\\b.json", "..", "x\ny", "d/"]
)
async def test_unsafe_entry_names_are_refused(
    served: tuple[Any, Archive], tmp_path: Path, name: str
) -> None:
    """Path traversal, absolute paths and directories never reach the disk."""
    stub, archive = served
    archive.data = zip_entries({"tokenizer.json": b"{}", name: b"evil"})
    archive.sha256 = hashlib.sha256(archive.data).hexdigest()
    cache = tmp_path / "deep" / "cache"
    with pytest.raises(TokenizerFetchError, match="Unsafe entry"):
        await fetch_tokenizer_dir(stub, cache, timeout=10)
    assert tree(tmp_path) == ["deep", "deep/cache"]


async def test_not_a_zip_is_refused(served: tuple[Any, Archive], tmp_path: Path) -> None:
    """Bytes that are not a zip archive raise TokenizerFetchError."""
    stub, archive = served
    archive.data = b"definitely not a zip" * 10
    archive.sha256 = hashlib.sha256(archive.data).hexdigest()
    with pytest.raises(TokenizerFetchError, match="not a valid zip"):
        await fetch_tokenizer_dir(stub, tmp_path, timeout=10)


async def test_fetched_directory_loads_like_the_source(
    served: tuple[Any, Archive], tmp_path: Path
) -> None:
    """The fetched directory loads into a bundle that encodes like the original."""
    stub, _ = served
    bundle = load_tokenizer_bundle(await fetch_tokenizer_dir(stub, tmp_path, timeout=10))
    original = load_tokenizer_bundle(tokenizer_dir())
    text = "hello 世界 🚀"
    assert bundle.encode(text, add_special_tokens=False) == original.encode(text, False)


def test_bundle_reads_special_tokens_and_eos_ids() -> None:
    """The stand-in's bundle has HF's special tokens, EOS id and one compiled template."""
    bundle = load_tokenizer_bundle(tokenizer_dir())
    assert bundle.special_tokens == {
        "bos_token": "<|endoftext|>",
        "eos_token": "<|im_end|>",
        "pad_token": "<|endoftext|>",
    }
    assert (bundle.bos_token, bundle.eos_token, bundle.unk_token) == (
        "<|endoftext|>",
        "<|im_end|>",
        None,
    )
    assert bundle.eos_token_ids == (2,)
    assert bundle.added_tokens == {0: "<|endoftext|>", 1: "<|im_start|>", 2: "<|im_end|>"}
    assert list(bundle.chat_templates) == ["default"]
    assert bundle.model_max_length == 4096
    assert bundle.add_bos_token is False


def copy_tokenizer(directory: Path, config: dict[str, Any]) -> Path:
    """A tokenizer dir with the stand-in's tokenizer.json and the given config."""
    shutil.copy(tokenizer_dir() / "tokenizer.json", directory / "tokenizer.json")
    (directory / "tokenizer_config.json").write_text(json.dumps(config))
    return directory


def test_added_token_dicts_extra_tokens_and_generation_config(tmp_path: Path) -> None:
    """AddedToken dicts, other *_token strings and generation_config EOS ids are read."""
    token = {"__type": "AddedToken", "content": "<|im_end|>", "special": True}
    copy_tokenizer(
        tmp_path,
        {
            "eos_token": token,
            "image_token": "<|im_start|>",
            "add_bos_token": True,
            "pad_token": None,
        },
    )
    (tmp_path / "generation_config.json").write_text(json.dumps({"eos_token_id": [0, 2]}))
    bundle = load_tokenizer_bundle(tmp_path)
    assert bundle.special_tokens == {"eos_token": "<|im_end|>", "image_token": "<|im_start|>"}
    assert bundle.eos_token_ids == (2, 0)
    assert bundle.add_bos_token is True
    assert bundle.chat_templates == {}


def test_chat_template_precedence(tmp_path: Path) -> None:
    """chat_template.jinja beats tokenizer_config.json, which beats chat_template.json."""
    copy_tokenizer(tmp_path, {"chat_template": "config"})
    (tmp_path / "chat_template.json").write_text(json.dumps({"chat_template": "legacy"}))
    assert load_tokenizer_bundle(tmp_path).chat_templates["default"].source == "config"
    (tmp_path / "chat_template.jinja").write_text("file")
    assert load_tokenizer_bundle(tmp_path).chat_templates["default"].source == "file"
    (tmp_path / "chat_template.jinja").unlink()
    copy_tokenizer(tmp_path, {})
    assert load_tokenizer_bundle(tmp_path).chat_templates["default"].source == "legacy"


def test_encode_matches_transformers_and_ignores_truncation(tmp_path: Path) -> None:
    """encode() equals HF's encode with and without special tokens, never truncating."""
    data = json.loads((tokenizer_dir() / "tokenizer.json").read_text())
    data["truncation"] = {
        "direction": "Right",
        "max_length": 3,
        "strategy": "LongestFirst",
        "stride": 0,
    }
    copy_tokenizer(tmp_path, {"tokenizer_class": "PreTrainedTokenizerFast"})
    (tmp_path / "tokenizer.json").write_text(json.dumps(data))
    bundle = load_tokenizer_bundle(tmp_path)
    hf = PreTrainedTokenizerFast.from_pretrained(tmp_path)
    text = "the quick brown fox 你好 🙂 <|im_end|> jumps"
    for special in (True, False):
        assert bundle.encode(text, special) == hf.encode(text, add_special_tokens=special)
    assert len(bundle.encode(text, False)) > 3


def test_missing_tokenizer_json_and_broken_template_raise(tmp_path: Path) -> None:
    """No tokenizer.json, or a template that does not parse, is a TokenizerFetchError."""
    with pytest.raises(TokenizerFetchError, match=r"tokenizer\.json"):
        load_tokenizer_bundle(tmp_path)
    copy_tokenizer(tmp_path, {"chat_template": "{% for %}"})
    with pytest.raises(TokenizerFetchError, match="chat template"):
        load_tokenizer_bundle(tmp_path)
