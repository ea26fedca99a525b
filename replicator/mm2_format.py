"""MirrorMaker 2's wire format for checkpoints and heartbeats (Kafka protocol ``Struct``s).

Our replicator writes the same records MM2 writes, so MM2's tooling (``RemoteClusterUtils``,
``kafka-consumer-groups`` on checkpoints) works against it, and the harness reads both alike.
STRING is an int16 length then UTF-8 bytes; integers are big-endian. Keys carry no version;
values start with an int16 version (0).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

VERSION = 0


def _string(s: str) -> bytes:
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def _read_string(buf: bytes, pos: int) -> tuple[str, int]:
    (n,) = struct.unpack_from(">h", buf, pos)
    pos += 2
    if n < 0:
        return "", pos
    return buf[pos:pos + n].decode(), pos + n


@dataclass(frozen=True)
class Checkpoint:
    """A consumer group's offset on the source and its translation on the target."""

    group: str
    topic: str  # the remote topic, on the target
    partition: int
    upstream_offset: int
    downstream_offset: int
    metadata: str = ""

    def key(self) -> bytes:
        return _string(self.group) + _string(self.topic) + struct.pack(">i", self.partition)

    def value(self) -> bytes:
        return struct.pack(">hqq", VERSION, self.upstream_offset, self.downstream_offset) + _string(self.metadata)

    @classmethod
    def decode(cls, key: bytes, value: bytes) -> "Checkpoint":
        group, pos = _read_string(key, 0)
        topic, pos = _read_string(key, pos)
        (partition,) = struct.unpack_from(">i", key, pos)
        version, upstream, downstream = struct.unpack_from(">hqq", value, 0)
        if version != VERSION:
            raise ValueError(f"unsupported checkpoint version {version}")
        metadata, _ = _read_string(value, 18)
        return cls(group, topic, partition, upstream, downstream, metadata)


@dataclass(frozen=True)
class Heartbeat:
    """Proof of life of one replication flow, emitted on a schedule."""

    source_alias: str
    target_alias: str
    timestamp_ms: int

    def key(self) -> bytes:
        return _string(self.source_alias) + _string(self.target_alias)

    def value(self) -> bytes:
        return struct.pack(">hq", VERSION, self.timestamp_ms)

    @classmethod
    def decode(cls, key: bytes, value: bytes) -> "Heartbeat":
        source, pos = _read_string(key, 0)
        target, _ = _read_string(key, pos)
        version, ts = struct.unpack_from(">hq", value, 0)
        if version != VERSION:
            raise ValueError(f"unsupported heartbeat version {version}")
        return cls(source, target, ts)
