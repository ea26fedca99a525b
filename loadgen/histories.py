"""On-disk histories: row schemas, buffered append-writers and tolerant readers.

Format, shared by every kind: UTF-8 CSV without header, one record per physical line,
``\\n`` line ends, RFC 4180 quoting (a field holding ``,`` or ``"`` is quoted, quotes are
doubled). Integers are decimal, booleans ``true``/``false``, a missing optional integer is
an empty field. Line breaks inside free text (``error``, ``detail``, ...) are written as
the two characters ``\\n`` so that a record never spans lines: that is what lets a reader
tell a record torn by a crash (the bytes after the last ``\\n``) from a complete one.

One file per history kind per writer process (see :func:`history_path`). A reader skips a
torn last line and counts it; any other malformed line is an error, never silently dropped.
Spark reads the same files with ``spark.read.options(**SPARK_CSV_OPTIONS).csv(paths,
schema=acked_send_schema())``; a torn last line needs the checker's loader
(``harness.checker.spark_io``), which drops it exactly as the Python readers do.
"""

from __future__ import annotations

import csv
import gc
import io
import logging
import os
import socket
import threading
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Generic, Iterable, TypeVar

if TYPE_CHECKING:  # pyspark is heavy and only the Spark checker needs it
    from pyspark.sql.types import StructType

log = logging.getLogger(__name__)

# Options Spark needs to read these files exactly as written: Python's csv module escapes
# a quote by doubling it, Spark's default escape is a backslash.
SPARK_CSV_OPTIONS: dict[str, str] = {
    "header": "false",
    "sep": ",",
    "quote": '"',
    "escape": '"',
    "multiLine": "false",
    "lineSep": "\n",
    "mode": "FAILFAST",
    "ignoreLeadingWhiteSpace": "false",
    "ignoreTrailingWhiteSpace": "false",
}

DEFAULT_BUFFER_BYTES = 256 * 1024


# --------------------------------------------------------------------------- rows


@dataclass(frozen=True, slots=True)
class AckedSend:
    """One acknowledged produce: the ledger of what the source cluster promised to keep."""

    cluster: str
    topic: str
    partition: int
    offset: int
    producer_id: str
    seq: int
    send_ts_ms: int
    ack_ts_ms: int
    size_bytes: int
    checksum: int


@dataclass(frozen=True, slots=True)
class UncertainSend:
    """A send with no acknowledgement: delivery error, or still pending at shutdown."""

    cluster: str
    topic: str
    producer_id: str
    seq: int
    send_ts_ms: int
    error: str


@dataclass(frozen=True, slots=True)
class TargetRecord:
    """One read of one record on a target cluster by the harness's observer."""

    cluster: str
    topic: str
    partition: int
    offset: int
    producer_id: str
    seq: int
    seen_ts_ms: int
    checksum_ok: bool
    checksum: int


@dataclass(frozen=True, slots=True)
class ProcessedRecord:
    """An application consumer (a group member) processed one record."""

    group: str
    cluster: str
    topic: str
    partition: int
    offset: int
    producer_id: str
    seq: int
    processed_ts_ms: int


@dataclass(frozen=True, slots=True)
class LagSample:
    """The end offset of one partition on one cluster, sampled at ``ts_ms``."""

    ts_ms: int
    cluster: str
    topic: str
    partition: int
    end_offset: int


@dataclass(frozen=True, slots=True)
class TimelineEvent:
    """A fault or a failover step; ``end_ts_ms`` is None while it has not ended."""

    name: str
    kind: str
    start_ts_ms: int
    end_ts_ms: int | None
    outcome: str
    detail: str


def _names(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in fields(cls))


ACKED_SEND_FIELDS = _names(AckedSend)
UNCERTAIN_SEND_FIELDS = _names(UncertainSend)
TARGET_RECORD_FIELDS = _names(TargetRecord)
PROCESSED_RECORD_FIELDS = _names(ProcessedRecord)
LAG_SAMPLE_FIELDS = _names(LagSample)
TIMELINE_EVENT_FIELDS = _names(TimelineEvent)

# --------------------------------------------------------------------------- encoding

_NEEDS_QUOTES = frozenset(',"\r\n')


def _quote(text: str) -> str:
    if _NEEDS_QUOTES.isdisjoint(text):
        return text
    return '"' + text.replace('"', '""') + '"'


def _free_text(text: str) -> str:
    # Keep one record per line: a torn record must be recognisable as the last line.
    folded = text.replace("\r\n", "\\n").replace("\n", "\\n").replace("\r", "\\n")
    return _quote(folded)


def _opt_int(value: int | None) -> str:
    return "" if value is None else f"{value:d}"


def _bool(value: bool) -> str:
    if value is True:
        return "true"
    if value is False:
        return "false"
    raise TypeError(f"expected a bool, got {value!r}")


class _Identifiers:
    """Memoises the quoted form of identifiers (clusters, topics, producer ids) that repeat."""

    __slots__ = ("_cache",)
    _LIMIT = 4096

    def __init__(self) -> None:
        self._cache: dict[str, str] = {}

    def __call__(self, text: str) -> str:
        quoted = self._cache.get(text)
        if quoted is None:
            if not isinstance(text, str):
                raise TypeError(f"expected a str, got {text!r}")
            if "\n" in text or "\r" in text:
                raise ValueError(f"an identifier cannot hold a line break: {text!r}")
            quoted = _quote(text)
            if len(self._cache) < self._LIMIT:
                self._cache[text] = quoted
        return quoted


def _encode_acked(r: AckedSend, ident: _Identifiers) -> str:
    return (f"{ident(r.cluster)},{ident(r.topic)},{r.partition:d},{r.offset:d},"
            f"{ident(r.producer_id)},{r.seq:d},{r.send_ts_ms:d},{r.ack_ts_ms:d},"
            f"{r.size_bytes:d},{r.checksum:d}\n")


def _encode_uncertain(r: UncertainSend, ident: _Identifiers) -> str:
    return (f"{ident(r.cluster)},{ident(r.topic)},{ident(r.producer_id)},{r.seq:d},"
            f"{r.send_ts_ms:d},{_free_text(r.error)}\n")


def _encode_target(r: TargetRecord, ident: _Identifiers) -> str:
    return (f"{ident(r.cluster)},{ident(r.topic)},{r.partition:d},{r.offset:d},"
            f"{ident(r.producer_id)},{r.seq:d},{r.seen_ts_ms:d},{_bool(r.checksum_ok)},"
            f"{r.checksum:d}\n")


def _encode_processed(r: ProcessedRecord, ident: _Identifiers) -> str:
    return (f"{ident(r.group)},{ident(r.cluster)},{ident(r.topic)},{r.partition:d},"
            f"{r.offset:d},{ident(r.producer_id)},{r.seq:d},{r.processed_ts_ms:d}\n")


def _encode_lag(r: LagSample, ident: _Identifiers) -> str:
    return (f"{r.ts_ms:d},{ident(r.cluster)},{ident(r.topic)},{r.partition:d},"
            f"{r.end_offset:d}\n")


def _encode_timeline(r: TimelineEvent, ident: _Identifiers) -> str:
    return (f"{_free_text(r.name)},{_free_text(r.kind)},{r.start_ts_ms:d},"
            f"{_opt_int(r.end_ts_ms)},{_free_text(r.outcome)},{_free_text(r.detail)}\n")


# --------------------------------------------------------------------------- decoding


def _parse_bool(text: str) -> bool:
    if text == "true":
        return True
    if text == "false":
        return False
    raise ValueError(f"not a boolean: {text!r}")


def _parse_opt_int(text: str) -> int | None:
    return None if text == "" else int(text)


def _decode_acked(f: list[str]) -> AckedSend:
    return AckedSend(f[0], f[1], int(f[2]), int(f[3]), f[4], int(f[5]), int(f[6]),
                     int(f[7]), int(f[8]), int(f[9]))


def _decode_uncertain(f: list[str]) -> UncertainSend:
    return UncertainSend(f[0], f[1], f[2], int(f[3]), int(f[4]), f[5])


def _decode_target(f: list[str]) -> TargetRecord:
    return TargetRecord(f[0], f[1], int(f[2]), int(f[3]), f[4], int(f[5]), int(f[6]),
                        _parse_bool(f[7]), int(f[8]))


def _decode_processed(f: list[str]) -> ProcessedRecord:
    return ProcessedRecord(f[0], f[1], f[2], int(f[3]), int(f[4]), f[5], int(f[6]),
                           int(f[7]))


def _decode_lag(f: list[str]) -> LagSample:
    return LagSample(int(f[0]), f[1], f[2], int(f[3]), int(f[4]))


def _decode_timeline(f: list[str]) -> TimelineEvent:
    return TimelineEvent(f[0], f[1], int(f[2]), _parse_opt_int(f[3]), f[4], f[5])


# --------------------------------------------------------------------------- kinds

R = TypeVar("R")


@dataclass(frozen=True)
class HistoryKind(Generic[R]):
    """Everything needed to write, read and Spark-read one kind of history."""

    name: str
    row_type: type[R]
    fields: tuple[str, ...]
    encode: Callable[[Any, _Identifiers], str]
    decode: Callable[[list[str]], R]
    spark_types: tuple[str, ...]  # Spark type names, one per field

    def spark_schema(self) -> "StructType":
        from pyspark.sql import types as T

        make = {"string": T.StringType, "int": T.IntegerType, "long": T.LongType,
                "boolean": T.BooleanType}
        return T.StructType([T.StructField(n, make[t](), True)
                             for n, t in zip(self.fields, self.spark_types)])

    def spark_ddl(self) -> str:
        """The schema as a DDL string (what ``from_csv`` takes)."""
        return ", ".join(f"`{n}` {t.upper()}" for n, t in zip(self.fields, self.spark_types))


ACKED_SENDS = HistoryKind(
    "acked", AckedSend, ACKED_SEND_FIELDS, _encode_acked, _decode_acked,
    ("string", "string", "int", "long", "string", "long", "long", "long", "long", "long"))
UNCERTAIN_SENDS = HistoryKind(
    "uncertain", UncertainSend, UNCERTAIN_SEND_FIELDS, _encode_uncertain, _decode_uncertain,
    ("string", "string", "string", "long", "long", "string"))
TARGET_RECORDS = HistoryKind(
    "target", TargetRecord, TARGET_RECORD_FIELDS, _encode_target, _decode_target,
    ("string", "string", "int", "long", "string", "long", "long", "boolean", "long"))
PROCESSED_RECORDS = HistoryKind(
    "processed", ProcessedRecord, PROCESSED_RECORD_FIELDS, _encode_processed,
    _decode_processed,
    ("string", "string", "string", "int", "long", "string", "long", "long"))
LAG_SAMPLES = HistoryKind(
    "lag", LagSample, LAG_SAMPLE_FIELDS, _encode_lag, _decode_lag,
    ("long", "string", "string", "int", "long"))
TIMELINE_EVENTS = HistoryKind(
    "timeline", TimelineEvent, TIMELINE_EVENT_FIELDS, _encode_timeline, _decode_timeline,
    ("string", "string", "long", "long", "string", "string"))

KINDS: dict[str, HistoryKind] = {k.name: k for k in (
    ACKED_SENDS, UNCERTAIN_SENDS, TARGET_RECORDS, PROCESSED_RECORDS, LAG_SAMPLES,
    TIMELINE_EVENTS)}


# --------------------------------------------------------------------------- files


def history_path(directory: str | os.PathLike, kind: HistoryKind | str,
                 writer: str | None = None) -> Path:
    """The file one writer process uses for one kind: ``<dir>/<kind>.<writer>.csv``."""
    name = kind if isinstance(kind, str) else kind.name
    tag = writer if writer is not None else f"{socket.gethostname()}-{os.getpid()}"
    if not tag or any(c in tag for c in "/\\"):
        raise ValueError(f"writer tag must be a non-empty file-name part, got {tag!r}")
    return Path(directory) / f"{name}.{tag}.csv"


def history_files(directory: str | os.PathLike, kind: HistoryKind | str) -> list[Path]:
    """Every file of one kind in a directory, in a stable order."""
    name = kind if isinstance(kind, str) else kind.name
    return sorted(Path(directory).glob(f"{name}.*.csv"))


class TornHistoryError(ValueError):
    """Appending after a torn record would glue two records into one line."""


class HistoryFormatError(ValueError):
    """A complete line that is not a valid record: corruption, not a crash."""


class HistoryWriter(Generic[R]):
    """Appends rows of one kind to one file; buffered in memory, whole lines to the OS.

    ``flush()`` hands complete lines to the OS (no fsync): a crash of this process then
    loses nothing flushed, and a crash mid-write tears at most the last line. Safe to share
    between threads.
    """

    def __init__(self, kind: HistoryKind[R], path: str | os.PathLike,
                 buffer_bytes: int = DEFAULT_BUFFER_BYTES) -> None:
        self.kind = kind
        self.path = Path(path)
        self._buffer_bytes = buffer_bytes
        self._ident = _Identifiers()
        self._lock = threading.Lock()
        self._pending: list[str] = []
        self._pending_chars = 0
        self.rows_written = 0
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fd: int | None = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND,
                                       0o644)
        try:
            self._refuse_torn_tail()
        except BaseException:
            os.close(self._fd)
            self._fd = None
            raise

    def _refuse_torn_tail(self) -> None:
        size = os.fstat(self._fd).st_size
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

    def _check_open(self) -> None:
        if self._fd is None:
            raise ValueError(f"history writer for {self.path} is closed")

    def _drain(self) -> None:
        self._check_open()
        if not self._pending:
            return
        data = "".join(self._pending).encode("utf-8")
        self._pending.clear()
        self._pending_chars = 0
        view = memoryview(data)
        while view:  # os.write may write less than asked
            view = view[os.write(self._fd, view):]

    def __enter__(self) -> "HistoryWriter[R]":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self.path)!r})"


class AckedSendWriter(HistoryWriter[AckedSend]):
    """Append-writer for the ledger of acknowledged sends."""

    def __init__(self, path: str | os.PathLike, buffer_bytes: int = DEFAULT_BUFFER_BYTES):
        super().__init__(ACKED_SENDS, path, buffer_bytes)


class UncertainSendWriter(HistoryWriter[UncertainSend]):
    """Append-writer for sends without acknowledgement."""

    def __init__(self, path: str | os.PathLike, buffer_bytes: int = DEFAULT_BUFFER_BYTES):
        super().__init__(UNCERTAIN_SENDS, path, buffer_bytes)


class TargetRecordWriter(HistoryWriter[TargetRecord]):
    """Append-writer for the observer's reads on a target cluster."""

    def __init__(self, path: str | os.PathLike, buffer_bytes: int = DEFAULT_BUFFER_BYTES):
        super().__init__(TARGET_RECORDS, path, buffer_bytes)


class ProcessedRecordWriter(HistoryWriter[ProcessedRecord]):
    """Append-writer for records processed by application consumers."""

    def __init__(self, path: str | os.PathLike, buffer_bytes: int = DEFAULT_BUFFER_BYTES):
        super().__init__(PROCESSED_RECORDS, path, buffer_bytes)


class LagSampleWriter(HistoryWriter[LagSample]):
    """Append-writer for end-offset samples."""

    def __init__(self, path: str | os.PathLike, buffer_bytes: int = DEFAULT_BUFFER_BYTES):
        super().__init__(LAG_SAMPLES, path, buffer_bytes)


class TimelineEventWriter(HistoryWriter[TimelineEvent]):
    """Append-writer for fault and failover steps."""

    def __init__(self, path: str | os.PathLike, buffer_bytes: int = DEFAULT_BUFFER_BYTES):
        super().__init__(TIMELINE_EVENTS, path, buffer_bytes)


# --------------------------------------------------------------------------- reading


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


Paths = str | os.PathLike | Iterable[str | os.PathLike]


def as_paths(paths: Paths) -> list[Path]:
    """One path or many, as a list of Paths."""
    if isinstance(paths, (str, os.PathLike)):
        return [Path(paths)]
    return [Path(p) for p in paths]


def valid_prefix_length(path: str | os.PathLike) -> tuple[int, int]:
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
    decode, width = kind.decode, len(kind.fields)
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


def read_acked_sends(paths: Paths) -> list[AckedSend]:
    """All acknowledged sends in these files (torn last lines skipped)."""
    return load_history(ACKED_SENDS, paths).rows


def read_uncertain_sends(paths: Paths) -> list[UncertainSend]:
    """All unacknowledged sends in these files (torn last lines skipped)."""
    return load_history(UNCERTAIN_SENDS, paths).rows


def read_target_records(paths: Paths) -> list[TargetRecord]:
    """All observer reads in these files (torn last lines skipped)."""
    return load_history(TARGET_RECORDS, paths).rows


def read_processed_records(paths: Paths) -> list[ProcessedRecord]:
    """All consumer processings in these files (torn last lines skipped)."""
    return load_history(PROCESSED_RECORDS, paths).rows


def read_lag_samples(paths: Paths) -> list[LagSample]:
    """All end-offset samples in these files (torn last lines skipped)."""
    return load_history(LAG_SAMPLES, paths).rows


def read_timeline_events(paths: Paths) -> list[TimelineEvent]:
    """All timeline events in these files (torn last lines skipped)."""
    return load_history(TIMELINE_EVENTS, paths).rows


def acked_send_schema() -> "StructType":
    """Spark schema of the acked-sends files."""
    return ACKED_SENDS.spark_schema()


def uncertain_send_schema() -> "StructType":
    """Spark schema of the uncertain-sends files."""
    return UNCERTAIN_SENDS.spark_schema()


def target_record_schema() -> "StructType":
    """Spark schema of the target-records files."""
    return TARGET_RECORDS.spark_schema()


def processed_record_schema() -> "StructType":
    """Spark schema of the processed-records files."""
    return PROCESSED_RECORDS.spark_schema()


def lag_sample_schema() -> "StructType":
    """Spark schema of the lag-samples files."""
    return LAG_SAMPLES.spark_schema()


def timeline_event_schema() -> "StructType":
    """Spark schema of the timeline files."""
    return TIMELINE_EVENTS.spark_schema()
