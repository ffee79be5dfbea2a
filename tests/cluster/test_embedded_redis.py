"""The crawl's own redis-server (engine/cluster/embedded.py) is reachable only through its
0700 unix socket: it listens on no TCP port, on any address."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from crawlscope.engine.cluster.embedded import EmbeddedRedis

LISTEN = "0A"  # a socket's state in /proc/net/tcp{,6}: TCP_LISTEN


def socket_inodes(pid: int) -> set[str]:
    """The inodes of the sockets process `pid` holds open."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except FileNotFoundError:
            continue  # closed since the listing (redis opens and closes files): not a listener
        if target.startswith("socket:["):
            inodes.add(target.removeprefix("socket:[").removesuffix("]"))
    return inodes


def tcp_listening(inodes: set[str]) -> list[str]:
    """The local addresses (hex, as the kernel writes them) of the TCP sockets among
    `inodes` that listen, over IPv4 and IPv6."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == LISTEN and fields[9] in inodes:
                found.append(f"{table}: {fields[1]}")
    return found


def unix_listening(inodes: set[str]) -> set[str]:
    """The paths of the unix sockets among `inodes`."""
    paths = set()
    for line in Path("/proc/net/unix").read_text().splitlines()[1:]:
        fields = line.split()
        if len(fields) > 7 and fields[6] in inodes:
            paths.add(fields[7])
    return paths


def test_the_embedded_redis_listens_on_its_unix_socket_and_no_tcp_port() -> None:
    with EmbeddedRedis() as server:
        assert server.proc is not None and server.folder is not None
        inodes = socket_inodes(server.proc.pid)
        # The scan sees the server's sockets: its unix socket is among them.
        assert str(server.socket_path) in unix_listening(inodes), inodes
        assert tcp_listening(inodes) == []
        assert stat.S_IMODE(server.folder.stat().st_mode) == 0o700
