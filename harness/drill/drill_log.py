"""The drill's own log: every line the engine logs goes to the console and to ``drill.log``
in the run folder, so a failed run's folder still says what the drill did and when."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TextIO


class DrillLog:
    """A log callable: each message to ``echo`` (stderr) and, prefixed with epoch ms (the one
    timestamp format of the run folder), to the file. Thread-safe: the progress thread and
    failover's parallel group moves log at the same time."""

    def __init__(self, path: Path, echo: Callable[[str], None]):
        self.path = Path(path)
        self.echo = echo
        self._lock = threading.Lock()
        self._file: TextIO | None = self.path.open("w", encoding="utf-8")  # a reused folder holds a new run

    def __call__(self, message: str) -> None:
        with self._lock:
            if self._file is not None:
                for line in str(message).splitlines() or [""]:
                    self._file.write(f"{int(time.time() * 1000)} {line}\n")
                self._file.flush()  # a crash or kill -9 keeps what was logged
        self.echo(message)

    def close(self) -> None:
        """Later messages still reach the console."""
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None
