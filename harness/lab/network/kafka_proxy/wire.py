"""Kafka wire format, only as far as the proxy needs it: pure functions on frames, no I/O.

A frame here is the bytes after the 4-byte size prefix. Requests are only *read* (their header
says which response will come back under which correlation id). Responses that name brokers
are rewritten so every broker address is one the client must use (``AddressMap``):

- Metadata (api 3): the brokers array, right after throttle_time_ms (v3+); flexible from v9.
- FindCoordinator (api 10): one coordinator (v0-v3, flexible v3) or a batch of them (v4+).
- DescribeCluster (api 60, always flexible): its brokers, unless v1+ says they are controllers.
- ApiVersions (api 18): versions are clamped, see ``CLAMPED_MAX_VERSION`` (and the guard's caps).

Only the broker entries are decoded; every other byte is copied verbatim, so fields this module
does not know (tagged fields, later top-level fields) pass through untouched. Field layouts are
those of Kafka's message definitions (clients/src/main/resources/common/message/*Response.json).

Not rewritten, because the harness's clients do not use them: DescribeQuorum and the KRaft
controller APIs (they name controllers, which clients reach through bootstrap.controllers).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from mirrordrill.primitives.kafka.wire_reader import BigEndianReader

METADATA, FIND_COORDINATOR, API_VERSIONS, DESCRIBE_CLUSTER = 3, 10, 18, 60
PRODUCE, FETCH, SHARE_FETCH, SHARE_ACKNOWLEDGE = 0, 1, 78, 79
# First flexible version of each response we decode (compact strings/arrays, tagged fields,
# and a response header with tagged fields — except ApiVersions, whose header is always v0 so
# that a client can read it before it knows which versions the broker speaks).
FIRST_FLEXIBLE = {METADATA: 9, FIND_COORDINATOR: 3, DESCRIBE_CLUSTER: 0, API_VERSIONS: 3}
REWRITTEN_APIS = frozenset(FIRST_FLEXIBLE)

# Produce v10+ and Fetch v16+ (KIP-951) let the broker answer NOT_LEADER with the new leader's
# endpoint in a tagged NodeEndpoints field, and the client then connects there directly —
# around the proxy, so a WAN fault would no longer cut it. ShareFetch/ShareAcknowledge
# (KIP-932) always carry such endpoints. Advertising at most the last versions without them,
# and no share APIs, keeps every broker address a client learns inside Metadata/FindCoordinator,
# which the proxy rewrites. A client then learns a new leader by refreshing metadata instead.
CLAMPED_MAX_VERSION = {PRODUCE: 9, FETCH: 15}
DROPPED_APIS = frozenset({SHARE_FETCH, SHARE_ACKNOWLEDGE})
DESCRIBE_CLUSTER_CONTROLLERS = 2  # endpoint_type: 1 = brokers, 2 = controllers


class WireError(ValueError):
    """A frame is shorter than its fields say, or otherwise not what its api/version promise."""


@dataclass(frozen=True)
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int


@dataclass(frozen=True)
class AddressMap:
    """What a location's clients are told: every broker at ``host`` on its own port."""

    host: str
    ports: Mapping[int, int]  # node id -> port


@dataclass(frozen=True)
class Rewritten:
    frame: bytes
    unknown_nodes: tuple[int, ...] = ()  # node ids with no port in the map (left as the broker sent them)


def read_request_header(frame: bytes) -> RequestHeader:
    """api_key, api_version and correlation_id: the first 8 bytes of every request header version."""
    if len(frame) < 8:
        raise WireError(f"request frame of {len(frame)} bytes is shorter than a request header (8)")
    return RequestHeader(*struct.unpack_from(">hhi", frame, 0))


def response_correlation_id(frame: bytes) -> int:
    if len(frame) < 4:
        raise WireError(f"response frame of {len(frame)} bytes has no correlation id")
    return struct.unpack_from(">i", frame, 0)[0]


# ---------------------------------------------------------------- primitive reads and writes

class Reader(BigEndianReader):
    """A cursor over a frame; every read checks the frame is long enough."""

    def _short(self, n: int) -> Exception:
        return WireError(f"frame ends at byte {len(self.data)}, a field needs {n} bytes at {self.pos}")

    def skip(self, n: int) -> None:
        self._take(n)

    def uvarint(self) -> int:
        value, shift = 0, 0
        while True:
            byte = self._take(1)[0]
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7
            if shift > 28:
                raise WireError(f"unsigned varint at byte {self.pos} is longer than 5 bytes")

    def string(self, flexible: bool) -> str | None:
        """A (nullable) string: int16 length, or in flexible versions a varint of length + 1; null = -1 / 0."""
        n = self.uvarint() - 1 if flexible else self.int16()
        return None if n < 0 else self._take(n).decode("utf-8")

    def array_len(self, flexible: bool) -> int:
        """An array's element count (-1 for a null array)."""
        return self.uvarint() - 1 if flexible else self.int32()

    def tagged_fields(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()  # tag
            self._take(self.uvarint())


def uvarint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def string(value: str | None, flexible: bool) -> bytes:
    if value is None:
        return uvarint(0) if flexible else struct.pack(">h", -1)
    raw = value.encode("utf-8")
    return (uvarint(len(raw) + 1) if flexible else struct.pack(">h", len(raw))) + raw


def array_len(n: int, flexible: bool) -> bytes:
    return uvarint(n + 1) if flexible else struct.pack(">i", n)


# ---------------------------------------------------------------- broker entries

Skip = Callable[[Reader], object]  # what a reader returns is dropped


def _nothing(_: Reader) -> None:
    return None


class _Rewrite:
    """One response being rewritten: the output so far and the nodes the map did not know."""

    def __init__(self, data: bytes, addresses: AddressMap, flexible: bool, caps: Mapping[int, int]):
        self.data, self.addresses, self.flexible, self.caps = data, addresses, flexible, caps
        self.reader = Reader(data)
        self.out = bytearray()
        self.copied_to = 0
        self.unknown: list[int] = []

    def copy_to_here(self) -> None:
        self.out += self.data[self.copied_to:self.reader.pos]
        self.copied_to = self.reader.pos

    def endpoint(self) -> None:
        """node_id, host, port at the cursor: written with the mapped address (copied if unmapped)."""
        r = self.reader
        self.copy_to_here()
        node = r.int32()
        r.string(self.flexible)
        r.int32()
        port = self.addresses.ports.get(node)
        if port is None:
            if node >= 0:  # -1 is "no coordinator" in an error answer, not a broker
                self.unknown.append(node)
            self.copy_to_here()
            return
        self.out += struct.pack(">i", node) + string(self.addresses.host, self.flexible) + struct.pack(">i", port)
        self.copied_to = r.pos

    def entries(self, before: Skip, after: Skip) -> None:
        """An array whose entries are ``before`` fields, an endpoint, ``after`` fields."""
        for _ in range(max(self.reader.array_len(self.flexible), 0)):
            before(self.reader)
            self.endpoint()
            after(self.reader)
            if self.flexible:
                self.reader.tagged_fields()

    def result(self) -> Rewritten:
        self.out += self.data[self.copied_to:]
        return Rewritten(bytes(self.out), tuple(self.unknown))


def _header(rw: _Rewrite, api_key: int) -> None:
    rw.reader.int32()  # correlation id
    if rw.flexible and api_key != API_VERSIONS:
        rw.reader.tagged_fields()


def _metadata(rw: _Rewrite, version: int) -> None:
    r, flexible = rw.reader, rw.flexible
    if version >= 3:
        r.int32()  # throttle_time_ms
    rack = (lambda rd: rd.string(flexible)) if version >= 1 else _nothing
    rw.entries(_nothing, rack)  # the rest (cluster id, controller, topics...) is copied verbatim


def _find_coordinator(rw: _Rewrite, version: int) -> None:
    r, flexible = rw.reader, rw.flexible
    if version >= 1:
        r.int32()  # throttle_time_ms
    if version <= 3:
        r.int16()  # error_code
        if version >= 1:
            r.string(flexible)  # error_message
        rw.endpoint()
        return

    def error(rd: Reader) -> None:
        rd.int16()
        rd.string(flexible)

    rw.entries(lambda rd: rd.string(flexible), error)  # key; node, host, port; error code and message


def _describe_cluster(rw: _Rewrite, version: int) -> None:
    r = rw.reader
    r.int32()  # throttle_time_ms
    r.int16()  # error_code
    r.string(True)  # error_message
    if version >= 1 and r.int8() == DESCRIBE_CLUSTER_CONTROLLERS:
        return  # controllers are reached through bootstrap.controllers, not this proxy
    r.string(True)  # cluster_id
    r.int32()  # controller_id

    def rack_and_fenced(rd: Reader) -> None:
        rd.string(True)
        if version >= 2:
            rd.int8()  # is_fenced (bool)

    rw.entries(_nothing, rack_and_fenced)


def _api_versions(rw: _Rewrite, version: int) -> None:
    r, flexible = rw.reader, rw.flexible
    if r.int16() != 0:
        return  # an error answer (e.g. UNSUPPORTED_VERSION, in v0 layout) passes untouched
    rw.copy_to_here()
    count = r.array_len(flexible)
    kept: list[bytes] = []
    for _ in range(max(count, 0)):
        api_key, min_v, max_v = r.int16(), r.int16(), r.int16()
        start = r.pos
        if flexible:
            r.tagged_fields()
        if api_key in DROPPED_APIS:
            continue
        cap = rw.caps.get(api_key)
        if cap is not None:
            max_v = max(min_v, min(max_v, cap))  # a broker whose minimum is above the cap keeps its minimum
        kept.append(struct.pack(">hhh", api_key, min_v, max_v) + rw.data[start:r.pos])
    rw.out += array_len(len(kept) if count >= 0 else -1, flexible) + b"".join(kept)
    rw.copied_to = r.pos


_BODIES = {METADATA: _metadata, FIND_COORDINATOR: _find_coordinator,
           DESCRIBE_CLUSTER: _describe_cluster, API_VERSIONS: _api_versions}


def rewrite_response(api_key: int, api_version: int, frame: bytes, addresses: AddressMap,
                     caps: Mapping[int, int] | None = None) -> Rewritten:
    """The response ``frame`` with every broker address taken from ``addresses``; others unchanged.

    ``caps`` lowers more APIs' advertised maximum versions (the guard's), on top of ``CLAMPED_MAX_VERSION``.
    """
    body = _BODIES.get(api_key)
    if body is None:
        return Rewritten(frame)
    merged = dict(CLAMPED_MAX_VERSION)
    for api, cap in (caps or {}).items():
        merged[api] = min(cap, merged.get(api, cap))
    rw = _Rewrite(frame, addresses, flexible=api_version >= FIRST_FLEXIBLE[api_key], caps=merged)
    _header(rw, api_key)
    body(rw, api_version)
    return rw.result()
