"""The kinds of history: each one's name, fields, codec and Spark types, and where its files are."""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from mirrordrill.loadgen.histories import codec
from mirrordrill.loadgen.histories.records import (
    AckedSend,
    LagSample,
    ProcessedRecord,
    TargetRecord,
    TimelineEvent,
    UncertainSend,
)

if TYPE_CHECKING:  # pyspark is heavy and only the Spark checker needs it
    from _typeshed import DataclassInstance
    from pyspark.sql.types import StructType

# Options Spark needs to read these files exactly as written: Python's csv module escapes
# a quote by doubling it, Spark's default escape is a backslash. Every file starts with a
# header row (the field names); the schema is given, so Spark only skips it.
SPARK_CSV_OPTIONS: dict[str, str] = {
    "header": "true",
    "sep": ",",
    "quote": '"',
    "escape": '"',
    "multiLine": "false",
    "lineSep": "\n",
    "mode": "FAILFAST",
    "ignoreLeadingWhiteSpace": "false",
    "ignoreTrailingWhiteSpace": "false",
}


R = TypeVar("R", bound="DataclassInstance")  # a history row: a dataclass, its fields the columns


@dataclass(frozen=True)
class HistoryKind(Generic[R]):
    """Everything needed to write, read and Spark-read one kind of history."""

    name: str
    row_type: type[R]
    fields: tuple[str, ...]
    encode: Callable[[Any, codec.Identifiers], str]
    decode: Callable[[list[str]], R]
    spark_types: tuple[str, ...]  # Spark type names, one per field

    @property
    def header(self) -> str:
        """The first line of every file of this kind: its field names (no field name needs quoting)."""
        return ",".join(self.fields) + "\n"

    def spark_schema(self) -> StructType:
        from pyspark.sql import types as T

        make = {"string": T.StringType, "int": T.IntegerType, "long": T.LongType,
                "boolean": T.BooleanType}
        return T.StructType([T.StructField(n, make[t](), True)
                             for n, t in zip(self.fields, self.spark_types, strict=True)])

    def spark_ddl(self) -> str:
        """The schema as a DDL string (what ``from_csv`` takes)."""
        return ", ".join(f"`{n}` {t.upper()}" for n, t in zip(self.fields, self.spark_types, strict=True))


def _kind(name: str, row_type: type[R], spark_types: tuple[str, ...]) -> HistoryKind[R]:
    """A kind whose columns, codec and field names all come from its row's dataclass."""
    columns = tuple(f.name for f in fields(row_type))
    if len(spark_types) != len(columns):
        raise TypeError(f"{name}: {len(spark_types)} Spark types for {len(columns)} fields")
    return HistoryKind(name, row_type, columns, codec.row_encoder(row_type), codec.row_decoder(row_type),
                       spark_types)


ACKED_SENDS = _kind("acked", AckedSend,
                    ("string", "string", "int", "long", "string", "long", "long", "long", "long", "long"))
UNCERTAIN_SENDS = _kind("uncertain", UncertainSend, ("string", "string", "string", "long", "long", "string"))
TARGET_RECORDS = _kind("target", TargetRecord,
                       ("string", "string", "int", "long", "string", "long", "long", "boolean", "long"))
PROCESSED_RECORDS = _kind("processed", ProcessedRecord,
                          ("string", "string", "string", "int", "long", "string", "long", "long"))
# End offsets sampled over time (lag is computed from them by the checker), hence the name.
END_OFFSETS = _kind("end_offsets", LagSample, ("long", "string", "string", "int", "long"))
TIMELINE_EVENTS = _kind("timeline", TimelineEvent,
                        ("string", "string", "long", "long", "string", "string", "string", "boolean", "long"))

KINDS: dict[str, HistoryKind[Any]] = {k.name: k for k in (
    ACKED_SENDS, UNCERTAIN_SENDS, TARGET_RECORDS, PROCESSED_RECORDS, END_OFFSETS,
    TIMELINE_EVENTS)}


def history_path(directory: str | os.PathLike[str], kind: HistoryKind[Any] | str,
                 writer: str | None = None) -> Path:
    """The file one writer process uses for one kind: ``<dir>/<kind>.<writer>.csv``."""
    name = kind if isinstance(kind, str) else kind.name
    tag = writer if writer is not None else f"{socket.gethostname()}-{os.getpid()}"
    if not tag or any(c in tag for c in "/\\"):
        raise ValueError(f"writer tag must be a non-empty file-name part, got {tag!r}")
    return Path(directory) / f"{name}.{tag}.csv"


def history_files(directory: str | os.PathLike[str], kind: HistoryKind[Any] | str) -> list[Path]:
    """Every file of one kind in a directory, in a stable order."""
    name = kind if isinstance(kind, str) else kind.name
    return sorted(Path(directory).glob(f"{name}.*.csv"))
