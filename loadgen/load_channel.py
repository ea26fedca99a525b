"""What a distributed load's master and workers say to each other over Locust's own channel.

Locust's ``send_message``/``register_message`` carry these messages (msgpack over ZeroMQ); nothing
here imports Locust, so the harness and the unit tests can use the ledger transfer too. A worker's
histories travel as the bytes of its own files, complete lines only, each chunk with the offset it
starts at: the master's copy is byte for byte the worker's (the ledger format is unchanged), and a
missing or repeated chunk is refused instead of becoming a wrong count.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

# worker -> master: its handlers are registered, so it may be sent its spec. Locust counts a worker
# as connected before the worker's constructor returns, and a message that arrives before a handler
# is registered is dropped ("Unknown message type"): the spec goes only to workers that said hello.
HELLO = "mirrordrill_hello"
# master -> worker: its spec, index and the cluster's security settings (never argv or a log)
SPEC = "mirrordrill_spec"
# worker -> master: it checked its settings and waits to produce (or why it cannot)
READY = "mirrordrill_ready"
# worker -> master: a chunk of one of its history files
ROWS = "mirrordrill_rows"
# worker -> master: its stats while it runs
PROGRESS = "mirrordrill_progress"
# master -> worker: stop producing (``abandon``: do not wait for acks)
STOP = "mirrordrill_stop"
# worker -> master: every chunk is sent; its final stats and each file's size
DONE = "mirrordrill_done"

CHUNK_BYTES = 512 * 1024  # one message's share of a file: small enough not to stall heartbeats


class LedgerShipper:
    """Reads what a worker's history files gained since the last call and sends it, whole lines only."""

    def __init__(self, files: dict[str, Path], send: Callable[[str, dict[str, Any]], None]) -> None:
        self.files = files  # history kind name -> the worker's own file
        self.sent: dict[str, int] = dict.fromkeys(files, 0)
        self._send = send

    def ship(self) -> int:
        """Send every complete line not sent yet; returns the bytes sent."""
        total = 0
        for kind, path in self.files.items():
            while True:
                data = _read_from(path, self.sent[kind], CHUNK_BYTES)
                end = data.rfind(b"\n") + 1
                if end == 0:
                    break
                self._send(ROWS, {"kind": kind, "offset": self.sent[kind], "data": data[:end]})
                self.sent[kind] += end
                total += end
        return total


def _read_from(path: Path, offset: int, limit: int) -> bytes:
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            return f.read(limit)
    except FileNotFoundError:
        return b""


class LedgerReceiver:
    """Writes one worker's chunks into the run folder at the offsets they were sent from."""

    def __init__(self, files: dict[str, Path]) -> None:
        self.files = files  # history kind name -> the master's copy
        self.received: dict[str, int] = dict.fromkeys(files, 0)
        for path in files.values():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(b"")

    def receive(self, kind: str, offset: int, data: bytes) -> None:
        """Append one chunk; ValueError for an unknown kind or a chunk out of order."""
        if kind not in self.files:
            raise ValueError(f"a chunk of an unknown history {kind!r}")
        if offset != self.received[kind]:
            raise ValueError(f"{kind} chunk at byte {offset}, expected {self.received[kind]}: a chunk was lost "
                             "or repeated")
        with open(self.files[kind], "ab") as f:
            f.write(data)
        self.received[kind] += len(data)

    def complete(self, sizes: dict[str, int]) -> str | None:
        """None when every file is whole (the sizes the worker reported at its end), else what is missing."""
        short = [f"{kind}: {self.received.get(kind, 0)} of {size} bytes" for kind, size in sizes.items()
                 if self.received.get(kind, 0) != size]
        return "; ".join(short) or None


def parse_master(text: str) -> tuple[str, int]:
    """HOST:PORT as (host, port); ValueError for anything else."""
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"--master takes HOST:PORT (e.g. 10.0.0.5:5557), not {text!r}")
    return host, int(port)
