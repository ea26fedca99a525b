"""Reading histories: every row of some files, a torn last line skipped and counted, anything
else malformed an error."""

from __future__ import annotations

import csv
import gc
import io
import logging
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Generic, TypeVar

from mirrordrill.loadgen.histories.kinds import HistoryKind

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

R = TypeVar("R", bound="DataclassInstance")  # a history row: a dataclass, its fields the columns


class HistoryFormatError(ValueError):
    """A complete line that is not a valid record: corruption, not a crash."""


@dataclass(frozen=True, slots=True)
class TornLine:
    """A record torn by a crash: the bytes after a file's last line end."""

    path: str
    line_number: int
    text: str


@dataclass(frozen=True)
class HistoryRead(Generic[R]):
    """Rows read from some files, and the torn last lines that were skipped."""

    rows: list[R]
    torn: tuple[TornLine, ...]

    @property
    def truncated(self) -> int:
        """How many torn lines were skipped."""
        return len(self.torn)


Paths = str | os.PathLike[str] | Iterable[str | os.PathLike[str]]


def as_paths(paths: Paths) -> list[Path]:
    """One path or many, as a list of Paths."""
    if isinstance(paths, (str, os.PathLike)):
        return [Path(paths)]
    return [Path(p) for p in paths]


def valid_prefix_length(path: str | os.PathLike[str]) -> tuple[int, int]:
    """(bytes up to and including the last line end, file size): the rest is torn."""
    size = os.path.getsize(path)
    if size == 0:
        return 0, 0
    with open(path, "rb") as f:
        pos = size
        block = 64 * 1024
        while pos > 0:  # scan backwards: a torn tail is shorter than one record
            start = max(0, pos - block)
            f.seek(start)
            chunk = f.read(pos - start)
            cut = chunk.rfind(b"\n")
            if cut >= 0:
                return start + cut + 1, size
            pos = start
    return 0, size


def _split_fields(line: str) -> list[str]:
    if '"' not in line:
        return line.split(",")
    return next(csv.reader(io.StringIO(line), strict=True))


def load_history(kind: HistoryKind[R], paths: Paths) -> HistoryRead[R]:
    """Read every file of one kind; skip and report torn last lines, reject anything else."""
    # Millions of new rows would trigger repeated full collections that find no garbage.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _load_history(kind, paths)
    finally:
        if was_enabled:
            gc.enable()


def _load_history(kind: HistoryKind[R], paths: Paths) -> HistoryRead[R]:
    rows: list[R] = []
    torn: list[TornLine] = []
    decode, width, header = kind.decode, len(kind.fields), kind.header.rstrip("\n")
    for path in as_paths(paths):
        with open(path, "rb") as f:
            data = f.read()
        cut = data.rfind(b"\n") + 1
        body, tail = data[:cut], data[cut:]
        lines = body.decode("utf-8").split("\n")
        lines.pop()  # the empty string after the final "\n"
        if tail:
            torn.append(TornLine(str(path), len(lines) + 1,
                                 tail.decode("utf-8", errors="replace")))
            log.warning("%s: skipped a torn last line (%d bytes)", path, len(tail))
        for number, line in enumerate(lines, start=1):
            if number == 1 and line == header:  # files without one (hand-made) are read too
                continue
            try:
                parts = _split_fields(line)
                if len(parts) != width:
                    raise ValueError(f"{len(parts)} fields, expected {width}")
                rows.append(decode(parts))
            except (ValueError, csv.Error) as exc:
                raise HistoryFormatError(
                    f"{path}:{number}: not a {kind.row_type.__name__} record ({exc}): "
                    f"{line[:200]!r}") from None
    return HistoryRead(rows, tuple(torn))


def read_rows(kind: HistoryKind[R], paths: Paths) -> list[R]:
    """Every row of one kind in these files (torn last lines skipped)."""
    return load_history(kind, paths).rows
