"""The append-writer of every history kind: buffered in memory, whole lines to the OS."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Generic, TypeVar

from mirrordrill.loadgen.histories.codec import Identifiers
from mirrordrill.loadgen.histories.kinds import HistoryKind

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

R = TypeVar("R", bound="DataclassInstance")  # a history row: a dataclass, its fields the columns

DEFAULT_BUFFER_BYTES = 256 * 1024


class TornHistoryError(ValueError):
    """Appending after a torn record would glue two records into one line."""




class HistoryWriter(Generic[R]):
    """Appends rows of one kind to one file; buffered in memory, whole lines to the OS.

    ``flush()`` hands complete lines to the OS (no fsync): a crash of this process then
    loses nothing flushed, and a crash mid-write tears at most the last line. Safe to share
    between threads.
    """

    def __init__(self, kind: HistoryKind[R], path: str | os.PathLike[str],
                 buffer_bytes: int = DEFAULT_BUFFER_BYTES) -> None:
        self.kind = kind
        self.path = Path(path)
        self._buffer_bytes = buffer_bytes
        self._ident = Identifiers()
        self._lock = threading.Lock()
        self._pending: list[str] = []
        self._pending_chars = 0
        self.rows_written = 0
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fd: int | None = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND,
                                       0o644)
        try:
            self._refuse_torn_tail(self._fd)
            if os.fstat(self._fd).st_size == 0:  # a new file: its header row first
                os.write(self._fd, kind.header.encode("utf-8"))
        except BaseException:
            os.close(self._fd)
            self._fd = None
            raise

    def _refuse_torn_tail(self, fd: int) -> None:
        size = os.fstat(fd).st_size
        if size == 0:
            return
        with open(self.path, "rb") as f:
            f.seek(size - 1)
            if f.read(1) != b"\n":
                raise TornHistoryError(
                    f"{self.path} ends with a torn record (a writer crashed mid-line); "
                    "write to a new file, one per writer process")

    def write(self, row: R) -> None:
        """Buffer one row; hands the buffer to the OS once it passes ``buffer_bytes``."""
        line = self.kind.encode(row, self._ident)
        with self._lock:
            self._check_open()
            self._pending.append(line)
            self._pending_chars += len(line)
            self.rows_written += 1
            if self._pending_chars >= self._buffer_bytes:
                self._drain()

    def write_many(self, rows: Iterable[R]) -> None:
        """Buffer many rows (same guarantees as :meth:`write`)."""
        encode, ident = self.kind.encode, self._ident
        lines = [encode(r, ident) for r in rows]
        with self._lock:
            self._check_open()
            self._pending.extend(lines)
            self._pending_chars += sum(map(len, lines))
            self.rows_written += len(lines)
            if self._pending_chars >= self._buffer_bytes:
                self._drain()

    def flush(self) -> None:
        """Hand every buffered line to the OS."""
        with self._lock:
            self._drain()

    def close(self) -> None:
        """Flush and close; further writes raise."""
        with self._lock:
            if self._fd is None:
                return
            try:
                self._drain()
            finally:
                os.close(self._fd)
                self._fd = None

    def _check_open(self) -> int:
        """The open file's descriptor; ValueError once closed."""
        if self._fd is None:
            raise ValueError(f"history writer for {self.path} is closed")
        return self._fd

    def _drain(self) -> None:
        fd = self._check_open()
        if not self._pending:
            return
        data = "".join(self._pending).encode("utf-8")
        self._pending.clear()
        self._pending_chars = 0
        view = memoryview(data)
        while view:  # os.write may write less than asked
            view = view[os.write(fd, view):]

    def __enter__(self) -> HistoryWriter[R]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self.path)!r})"
