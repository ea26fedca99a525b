"""Free loopback ports, chosen at run time so two drills can run side by side."""

from __future__ import annotations

import socket

LOOPBACK = "127.0.0.1"


class PortAllocator:
    """Hands out free loopback ports, never the same one twice from one allocator."""

    def __init__(self, host: str = LOOPBACK) -> None:
        self.host = host
        self._given: set[int] = set()

    def take(self) -> int:
        for _ in range(100):
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                s.bind((self.host, 0))
                port: int = s.getsockname()[1]
            if port not in self._given:
                self._given.add(port)
                return port
        raise RuntimeError("could not find a free loopback port after 100 tries")


def is_listening(host: str, port: int, timeout_s: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except OSError:
        return False
