"""Fetches the model's tokenizer from the server (`GetTokenizer`): downloads the zip it
streams, checks its SHA-256 and unpacks it atomically into `cache_root/<sha256>/` (reused when
there), for `tokenizer_store.load_tokenizer_bundle` to load.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import shutil
import tempfile
import zipfile
import zlib
from pathlib import Path
from typing import Any

import grpc
from smg_grpc_proto.generated import common_pb2, vllm_engine_pb2_grpc

from backends.vllm_grpc.tokenizer_store import TokenizerFetchError

MAX_ARCHIVE_BYTES = 512 * 1024 * 1024
MAX_UNPACKED_BYTES = 1024 * 1024 * 1024
MAX_ENTRIES = 256


async def fetch_tokenizer_dir(
    stub: vllm_engine_pb2_grpc.VllmEngineStub, cache_root: Path, timeout: float
) -> Path:
    """Download the server's tokenizer zip, verify it, and unpack it to `cache_root/<sha256>`."""
    data, expected = await _download(stub, timeout)
    return await asyncio.to_thread(_install, data, expected, cache_root)


async def _download(stub: Any, timeout: float) -> tuple[bytes, str]:
    parts: list[bytes] = []
    size = 0
    sha256 = ""
    call = stub.GetTokenizer(common_pb2.GetTokenizerRequest(), timeout=timeout)
    try:
        async for chunk in call:
            parts.append(chunk.data)
            size += len(chunk.data)
            if size > MAX_ARCHIVE_BYTES:
                raise TokenizerFetchError(f"The tokenizer zip exceeds {MAX_ARCHIVE_BYTES} bytes.")
            sha256 = chunk.sha256
    except grpc.aio.AioRpcError as exc:
        raise TokenizerFetchError(
            f"GetTokenizer failed: {exc.code().name} {exc.details()}"
        ) from exc
    finally:
        call.cancel()
    if not parts:
        raise TokenizerFetchError("GetTokenizer streamed no data.")
    if not sha256:
        raise TokenizerFetchError("GetTokenizer sent no SHA-256 on its last chunk.")
    return b"".join(parts), sha256.strip().lower()


def _install(data: bytes, expected: str, cache_root: Path) -> Path:
    digest = hashlib.sha256(data).hexdigest()
    if digest != expected:
        raise TokenizerFetchError(
            f"The tokenizer archive's SHA-256 is {digest}, but the server announced {expected}."
        )
    target = cache_root / digest
    if target.is_dir():
        return target
    cache_root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".partial-", dir=cache_root))
    try:
        _extract(data, staging)
        try:
            staging.rename(target)
        except OSError:
            if not target.is_dir():
                raise
            # A concurrent fetch of the same archive won the race; its content is identical.
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return target


def _extract(data: bytes, directory: Path) -> None:
    """Unpack plain files only: no directories, no path separators, bounded sizes."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            entries = archive.infolist()
            if len(entries) > MAX_ENTRIES:
                raise TokenizerFetchError(f"The tokenizer archive has over {MAX_ENTRIES} entries.")
            total = 0
            seen: set[str] = set()
            for entry in entries:
                name = entry.filename
                if entry.is_dir() or not _is_plain_name(name) or name in seen:
                    raise TokenizerFetchError(f"Unsafe entry {name!r} in the tokenizer archive.")
                seen.add(name)
                total += entry.file_size
                if total > MAX_UNPACKED_BYTES:
                    raise TokenizerFetchError("The tokenizer archive unpacks to too many bytes.")
                with archive.open(entry) as source, open(directory / name, "xb") as sink:
                    shutil.copyfileobj(source, sink)
    except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError) as exc:
        raise TokenizerFetchError(f"The tokenizer archive is not a valid zip: {exc}") from exc
    except OSError as exc:
        raise TokenizerFetchError(f"Cannot unpack the tokenizer archive: {exc}") from exc


def _is_plain_name(name: str) -> bool:
    return name not in {"", ".", ".."} and name.isprintable() and not any(c in name for c in "/\\:")
