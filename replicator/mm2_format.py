"""MirrorMaker 2's wire format for checkpoints and heartbeats (Kafka protocol ``Struct``s).

Our replicator writes the same records MM2 writes, so MM2's tooling (``RemoteClusterUtils``,
``kafka-consumer-groups`` on checkpoints) works against it, and the harness reads both alike.
STRING is an int16 length then UTF-8 bytes; integers are big-endian. Keys carry no version;
values start with an int16 version (0).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from mirrordrill.primitives.kafka.wire_reader import BigEndianReader

VERSION = 0


def _string(s: str) -> bytes:
    b = s.encode()
    return struct.pack(">h", len(b)) + b


class _Reader(BigEndianReader):
    """Reads Kafka protocol fields, failing clearly on truncated or malformed input."""

    def __init__(self, data: bytes, what: str) -> None:
        super().__init__(data)
        self.what = what

    def _short(self, n: int) -> Exception:
        return ValueError(f"truncated {self.what}: needed {n} bytes at {self.pos}, have {len(self.data)}")

    def string(self) -> str:
        length = self.int16()
        if length < 0:
            raise ValueError(f"{self.what}: negative string length {length}")
        return self._take(length).decode("utf-8")

    def version(self) -> None:
        version = self.int16()
        if version != VERSION:
            raise ValueError(f"{self.what}: unsupported version {version} (version {VERSION} is understood)")


@dataclass(frozen=True)
class Checkpoint:
    """A consumer group's offset on the source and its translation on the target."""

    group: str
    topic: str  # the remote topic, on the target
    partition: int
    upstream_offset: int
    downstream_offset: int
    metadata: str = ""
    record_offset: int = -1  # where the checkpoint record itself was read (-1: not read)

    def key(self) -> bytes:
        return _string(self.group) + _string(self.topic) + struct.pack(">i", self.partition)

    def value(self) -> bytes:
        return struct.pack(">hqq", VERSION, self.upstream_offset, self.downstream_offset) + _string(self.metadata)

    @classmethod
    def decode(cls, key: bytes, value: bytes, record_offset: int = -1) -> Checkpoint:
        k = _Reader(key, "checkpoint key")
        group, topic, partition = k.string(), k.string(), k.int32()
        v = _Reader(value, "checkpoint value")
        v.version()
        return cls(group, topic, partition, v.int64(), v.int64(), v.string(), record_offset)


@dataclass(frozen=True)
class Heartbeat:
    """Proof of life of flow ``source_alias->target_alias``, emitted on a schedule."""

    source_alias: str
    target_alias: str
    timestamp_ms: int

    def key(self) -> bytes:
        return _string(self.source_alias) + _string(self.target_alias)

    def value(self) -> bytes:
        return struct.pack(">hq", VERSION, self.timestamp_ms)

    @classmethod
    def decode(cls, key: bytes, value: bytes) -> Heartbeat:
        k = _Reader(key, "heartbeat key")
        source, target = k.string(), k.string()
        v = _Reader(value, "heartbeat value")
        v.version()
        return cls(source, target, v.int64())
