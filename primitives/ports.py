"""Free loopback ports for the lab's listeners, reserved across processes until the lab stops.

Binding port 0 and handing the number on is not enough: a broker's JVM binds its port seconds
later, and in between the kernel may give the same number to another process's ``bind(0)`` (a
second drill, a parallel test worker) or to any outgoing connection as its source port, since both
come from the ephemeral range. So listeners get ports from below the ephemeral range, and each
allocator reserves the blocks of ports it hands out with ``flock`` on a file under the cache's
``locks/ports`` folder: another mirrordrill process skips a reserved block, and the kernel drops
the lock when its holder exits, so a crashed run leaves nothing reserved.

Not portpicker: it coordinates processes only through a separate port-server daemon, and without
one it falls back to the ephemeral range that outgoing connections share.
"""

from __future__ import annotations

import errno
import fcntl
import random
import socket
from pathlib import Path
from typing import IO

LOOPBACK = "127.0.0.1"
BLOCK = 32  # ports per reservation: one lab takes 10-40, so usually one block
LOWEST = 10000  # below: well-known and registered services a team may run
MIN_BLOCKS = 16  # fewer free blocks than this below the ephemeral range: use the space above it
LINUX_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
IANA_EPHEMERAL = (49152, 65535)  # macOS and the BSDs, which have no /proc


def ephemeral_range(range_file: Path = LINUX_RANGE_FILE) -> tuple[int, int]:
    """The kernel's range for source ports of outgoing connections and ``bind(0)``."""
    try:
        low, high = (int(v) for v in range_file.read_text().split())
        return low, high
    except (OSError, ValueError):
        return IANA_EPHEMERAL


def listener_range(ephemeral: tuple[int, int]) -> tuple[int, int]:
    """Ports [first, last) for listeners: below the ephemeral range, else above it."""
    low, high = ephemeral
    if low - LOWEST >= MIN_BLOCKS * BLOCK:
        return LOWEST, low
    if 65536 - (high + 1) >= MIN_BLOCKS * BLOCK:
        return high + 1, 65536
    raise RuntimeError(f"the ephemeral port range {low}-{high} leaves no room for listeners; "
                       f"narrow it (sysctl net.ipv4.ip_local_port_range) so {MIN_BLOCKS * BLOCK} ports are free")


def default_lock_dir() -> Path:
    from mirrordrill.primitives.bootstrap import mirrordrill_home  # the cache folder; bootstrap is heavier to import
    return mirrordrill_home() / "locks" / "ports"


class PortAllocator:
    """Hands out free loopback ports, never the same one twice, none another allocator holds.

    Ports stay reserved until ``close()`` (or the process ends); use it as a context manager or
    close it when the lab it served has stopped.
    """

    def __init__(self, host: str = LOOPBACK, lock_dir: Path | None = None,
                 ports: tuple[int, int] | None = None) -> None:
        self.host = host
        self.lock_dir = lock_dir or default_lock_dir()
        self.first, self.last = ports or listener_range(ephemeral_range())
        self._blocks: list[IO[bytes]] = []
        self._free: list[int] = []
        self._random = random.Random()

    def __enter__(self) -> PortAllocator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def take(self) -> int:
        while True:
            while self._free:
                port = self._free.pop(0)
                if self._bindable(port):
                    return port
            self._reserve_block()

    def close(self) -> None:
        """Releases every reserved block (ports already given out may be reused by others)."""
        for fh in self._blocks:
            fh.close()  # closing the file drops its flock
        self._blocks.clear()
        self._free.clear()

    def _reserve_block(self) -> None:
        self.lock_dir.mkdir(parents=True, exist_ok=True)
        starts = list(range(self.first, self.last - BLOCK + 1, BLOCK))
        self._random.shuffle(starts)  # parallel runs start in different places and rarely contend
        for start in starts:
            fh = open(self.lock_dir / f"{start}.lock", "ab")
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as e:
                fh.close()
                if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                    continue
                raise
            self._blocks.append(fh)
            self._free = list(range(start, start + BLOCK))
            return
        raise RuntimeError(f"no free block of {BLOCK} loopback ports in {self.first}-{self.last - 1}: "
                           f"other mirrordrill runs hold them all (locks in {self.lock_dir})")

    def _bindable(self, port: int) -> bool:
        # No SO_REUSEADDR: a port with connections still in TIME_WAIT is skipped too.
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind((self.host, port))
            except OSError:
                return False
        return True


def is_listening(host: str, port: int, timeout_s: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except OSError:
        return False
