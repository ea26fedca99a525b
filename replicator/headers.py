"""Record headers the replicator reads or writes, in one place."""

from __future__ import annotations

import struct

from replicator.policy import PROVENANCE_HEADER

# Carries the source timestamp from the Spark job to the producer interceptor, which makes it
# the record's timestamp and removes the header (Spark's Kafka sink has no timestamp column).
TIMESTAMP_HEADER = "__mirrordrill.ts"

# The source offset of a replicated record (8 bytes, big-endian). The source partition is the
# same number as the target partition, so (target record -> source offset) is exact: offset
# translation reads it instead of keeping a sparse offset-sync log the way MM2 must.
SOURCE_OFFSET_HEADER = "mirrordrill.src.offset"

INTERNAL_HEADERS = (TIMESTAMP_HEADER, SOURCE_OFFSET_HEADER)

__all__ = ["TIMESTAMP_HEADER", "SOURCE_OFFSET_HEADER", "PROVENANCE_HEADER", "INTERNAL_HEADERS",
           "encode_offset", "decode_offset", "source_offset_of"]


def encode_offset(offset: int) -> bytes:
    return struct.pack(">q", offset)


def decode_offset(value: bytes) -> int:
    return int(struct.unpack(">q", value)[0])


def source_offset_of(headers: list[tuple[str, bytes]] | None) -> int | None:
    """The source offset stored on a replicated record, or None when it has none."""
    for key, value in reversed(headers or []):
        if key == SOURCE_OFFSET_HEADER and value is not None and len(value) == 8:
            return decode_offset(value)
    return None
