"""What a process's open descriptors are: sockets told apart by the port at the other end (a
known peer such as Redis or a replica, or clients on the gateway's own port: open, or closed by
the client and not yet by the gateway), pipes, epoll and other anonymous inodes, files."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Mapping
from pathlib import Path

PROC = Path("/proc")
_LISTEN = "0A"
_CLOSE_WAIT = "08"
CLIENTS = "clients"
CLIENTS_CLOSED = "clients closed by peer"
"""A client connection the client closed and the gateway did not: a leak if it lasts."""


def tcp_sockets() -> dict[str, tuple[int, int, str]]:
    """socket inode -> (local port, remote port, TCP state as /proc writes it: 0A listening,
    08 close-wait), over IPv4 and IPv6."""
    found: dict[str, tuple[int, int, str]] = {}
    for name in ("tcp", "tcp6"):
        try:
            lines = (PROC / "net" / name).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) < 10:
                continue
            local = int(fields[1].rsplit(":", 1)[1], 16)
            remote = int(fields[2].rsplit(":", 1)[1], 16)
            found[fields[9]] = (local, remote, fields[3])
    return found


def kind_of(
    target: str,
    sockets: Mapping[str, tuple[int, int, str]],
    peers: Mapping[int, str],
    own_port: int,
) -> str:
    if target.startswith("socket:["):
        tcp = sockets.get(target[8:-1])
        if tcp is None:
            return "unix/other socket"
        local, remote, state = tcp
        if state == _LISTEN:
            return "listening"
        if local == own_port:
            return CLIENTS_CLOSED if state == _CLOSE_WAIT else CLIENTS
        return peers.get(remote, "other tcp")
    if target.startswith("pipe:"):
        return "pipe"
    if target.startswith("anon_inode:"):
        return target[11:].strip("[]")
    return "file"


def fd_kinds(
    pid: int,
    sockets: Mapping[str, tuple[int, int, str]],
    peers: Mapping[int, str],
    own_port: int,
) -> dict[str, int]:
    """How many of the process's descriptors are of each kind (empty when it is gone)."""
    kinds: Counter[str] = Counter()
    directory = PROC / str(pid) / "fd"
    try:
        names = os.listdir(directory)
    except OSError:
        return {}
    for name in names:
        try:
            target = os.readlink(directory / name)
        except OSError:
            continue
        kinds[kind_of(target, sockets, peers, own_port)] += 1
    return dict(kinds)
