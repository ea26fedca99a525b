"""A cursor over Kafka protocol bytes: big-endian integers, every read checked against the end."""

from __future__ import annotations

import struct


class BigEndianReader:
    """Reads fixed-size Kafka protocol fields; a field running past the end raises ``_short``'s error."""

    def __init__(self, data: bytes, pos: int = 0) -> None:
        self.data, self.pos = data, pos

    def _short(self, n: int) -> Exception:
        """The error for a field of ``n`` bytes that the data does not hold (each reader says it its way)."""
        return ValueError(f"data ends at byte {len(self.data)}, a field needs {n} bytes at {self.pos}")

    def _take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise self._short(n)
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def int8(self) -> int:
        return int(struct.unpack(">b", self._take(1))[0])

    def int16(self) -> int:
        return int(struct.unpack(">h", self._take(2))[0])

    def int32(self) -> int:
        return int(struct.unpack(">i", self._take(4))[0])

    def int64(self) -> int:
        return int(struct.unpack(">q", self._take(8))[0])
