"""The live key set: authenticates each request in a dict lookup, and follows the key file as
it changes (polled, or at once on SIGHUP) without a restart or a dropped request."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

from access import sighup
from access.caller import Caller, bearer_token, key_digest, unverified_caller
from access.key_set import KeySetError, check_no_repeats, parse_key_set
from access.settings import AccessSettings
from core.errors import InvalidApiKey

log = logging.getLogger("gateway.access")

_FileStamp = tuple[int, int, int]  # inode, size, mtime in ns


class KeyRegistry:
    """Who may call. `caller()` is on every request's path: a SHA-256 and a dict lookup."""

    def __init__(self, settings: AccessSettings) -> None:
        self._settings = settings
        self._keys: Mapping[str, Caller] = MappingProxyType(dict(settings.inline_keys or {}))
        self._stamp: _FileStamp | None = None
        self._watcher: asyncio.Task[None] | None = None
        self._pending: asyncio.Task[bool] | None = None  # a SIGHUP reload, kept referenced
        self.reloads = 0
        self.reload_failures = 0
        if settings.keys_file is not None:
            self._load(settings.keys_file)

    @property
    def enabled(self) -> bool:
        return self._settings.enabled

    @property
    def key_count(self) -> int:
        return len(self._keys)

    def caller(self, authorization: str | None) -> Caller:
        """The caller a request's `Authorization` header proves; 401 when access control is on
        and it names no key of the set."""
        if not self._settings.enabled:
            return unverified_caller(authorization)
        token = bearer_token(authorization)
        if token is None:  # no header, an empty token, or not the Bearer scheme
            raise InvalidApiKey(
                "You didn't provide an API key. Send it as 'Authorization: Bearer YOUR_KEY'."
            )
        caller = self._keys.get(key_digest(token))
        if caller is None:
            raise InvalidApiKey(f"Incorrect API key provided: {_masked(token)}.")
        return caller

    async def start(self) -> None:
        """Follow the key file: poll it, and reload at once on SIGHUP."""
        path = self._settings.keys_file
        if path is None:
            return
        self._watcher = asyncio.create_task(self._watch(path))
        loop = asyncio.get_running_loop()
        try:
            loop.add_signal_handler(signal.SIGHUP, self._reload_soon, path)
        except (NotImplementedError, RuntimeError, ValueError):  # not the main thread
            log.info("SIGHUP reload not available here; the key file is polled")
        else:  # held until now (`access.sighup`): one sent meanwhile is answered now
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGHUP})
            if sighup.take():
                self._reload_soon(path)

    async def aclose(self) -> None:
        if self._watcher is not None:
            self._watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watcher
        if self._settings.keys_file is not None:
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                asyncio.get_running_loop().remove_signal_handler(signal.SIGHUP)
                # Not the default action, which would kill a process still shutting down.
                signal.signal(signal.SIGHUP, signal.SIG_IGN)

    async def reload(self) -> bool:
        """Re-read the key file now (off the event loop); False if it was kept as it was."""
        path = self._settings.keys_file
        if path is None:
            return False
        return await asyncio.to_thread(self._load, path)

    def _reload_soon(self, path: Path) -> None:
        self._pending = asyncio.get_running_loop().create_task(self.reload())

    async def _watch(self, path: Path) -> None:
        while True:
            await asyncio.sleep(self._settings.reload_interval_s)
            stamp = await asyncio.to_thread(_stamp, path)
            if stamp is not None and stamp != self._stamp:
                await asyncio.to_thread(self._load, path)

    def _load(self, path: Path) -> bool:
        """Swap in the file's keys, or keep the last good set and say why."""
        stamp = _stamp(path)
        inline = self._settings.inline_keys or {}
        source = f"key file {path} (GATEWAY_API_KEYS_FILE)"
        try:
            keys = parse_key_set(path.read_bytes(), source)
            check_no_repeats(keys, inline, source)
        except (OSError, KeySetError) as exc:
            self._stamp = stamp  # do not retry a broken file until it changes again
            self.reload_failures += 1
            log.error("keeping the last good key set (%d keys): %s", len(self._keys), exc)
            return False
        self._keys = MappingProxyType({**inline, **keys})
        self._stamp = stamp
        self.reloads += 1
        log.info("key set loaded: %d keys", len(self._keys))
        return True


def _stamp(path: Path) -> _FileStamp | None:
    try:
        status = os.stat(path)
    except OSError:
        return None
    return status.st_ino, status.st_size, status.st_mtime_ns


def _masked(token: str) -> str:
    """Like OpenAI's message: enough of the key to recognise it, never the whole."""
    if len(token) <= 8:
        return "*" * len(token)
    return f"{token[:3]}{'*' * 8}{token[-4:]}"
