"""Record headers the replicator reads or writes, in one place."""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from mirrordrill.replicator.policy import PROVENANCE_HEADER

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# Carries the source timestamp from the Spark job to the producer interceptor, which makes it
# the record's timestamp and removes the header (Spark's Kafka sink has no timestamp column).
TIMESTAMP_HEADER = "__mirrordrill.ts"

# The source offset of a replicated record (8 bytes, big-endian). The source partition is the
# same number as the target partition, so (target record -> source offset) is exact: offset
# translation reads it instead of keeping a sparse offset-sync log the way MM2 must.
SOURCE_OFFSET_HEADER = "mirrordrill.src.offset"

INTERNAL_HEADERS = (TIMESTAMP_HEADER, SOURCE_OFFSET_HEADER)

# The Spark SQL function that makes both headers' values: a BIGINT as 8 big-endian bytes, from the
# replicator's jar (replicator/jvm: Spark's ANSI mode refuses CAST(bigint AS BINARY), and the SQL
# detour through hex strings cost a task thread more than the rest of the headers together).
LONG_BYTES_FUNCTION = "mirrordrill_long_bytes"
LONG_BYTES_CLASS = "io.mirrordrill.replicator.BigEndianLong"

__all__ = ["TIMESTAMP_HEADER", "SOURCE_OFFSET_HEADER", "PROVENANCE_HEADER", "INTERNAL_HEADERS",
           "LONG_BYTES_FUNCTION", "LONG_BYTES_CLASS", "register_long_bytes",
           "RecordHeaders", "header_pairs", "encode_offset", "decode_offset", "source_offset_of"]

# The client's type for Message.headers(): a consumed record's headers come as (key, value)
# pairs; the mapping form is one a producer may be handed.
RecordHeaders = Mapping[str, str | bytes | None] | Sequence[tuple[str, str | bytes | None]]


def register_long_bytes(spark: SparkSession) -> None:
    """Make ``LONG_BYTES_FUNCTION`` callable in the session's SQL (the jar is on its classpath)."""
    from pyspark.sql.types import BinaryType
    spark.udf.registerJavaFunction(LONG_BYTES_FUNCTION, LONG_BYTES_CLASS, BinaryType())


def encode_offset(offset: int) -> bytes:
    return struct.pack(">q", offset)


def decode_offset(value: bytes) -> int:
    return int(struct.unpack(">q", value)[0])


def header_pairs(headers: RecordHeaders | None) -> list[tuple[str, bytes]]:
    """The headers that carry a value, as (key, bytes) pairs in the record's order."""
    pairs = headers.items() if isinstance(headers, Mapping) else (headers or [])
    return [(key, value) for key, value in pairs if isinstance(value, bytes)]


def source_offset_of(headers: RecordHeaders | None) -> int | None:
    """The source offset stored on a replicated record, or None when it has none."""
    for key, value in reversed(header_pairs(headers)):
        if key == SOURCE_OFFSET_HEADER and len(value) == 8:
            return decode_offset(value)
    return None
