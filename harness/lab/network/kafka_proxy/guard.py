"""What a request writes, read from its frame, and whether the drill owns it: the proxy's run-time guard.

A drill owns names on a team's cluster, not the cluster (``primitives.kafka.owned_names``): topics
under its literal prefix (and MirrorMaker 2's internal topics of its aliases), consumer groups
and transactional ids under it. Every write request is read far enough to name what it writes;
one naming something else is refused. Requests that change the cluster itself (ACLs, quotas,
reassignments, broker configs) are always refused: a drill changes none of them.

Only versions whose layout this module reads are let through: ``GUARDED_MAX_VERSION`` is the
highest version of each guarded API it parses, the ApiVersions answer is capped to it (see
``wire``), and a request of a higher version is refused unread. Field layouts are those of
Kafka's clients/src/main/resources/common/message/*Request.json.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from mirrordrill.harness.lab.network.kafka_proxy.wire import Reader, WireError
from mirrordrill.primitives.kafka.owned_names import owned_topic

API_NAMES = {
    0: "Produce", 3: "Metadata", 8: "OffsetCommit", 11: "JoinGroup", 12: "Heartbeat", 13: "LeaveGroup",
    14: "SyncGroup", 19: "CreateTopics", 20: "DeleteTopics", 21: "DeleteRecords", 22: "InitProducerId",
    24: "AddPartitionsToTxn", 25: "AddOffsetsToTxn", 26: "EndTxn", 27: "WriteTxnMarkers", 28: "TxnOffsetCommit",
    30: "CreateAcls", 31: "DeleteAcls", 33: "AlterConfigs", 34: "AlterReplicaLogDirs", 37: "CreatePartitions",
    42: "DeleteGroups", 43: "ElectLeaders", 44: "IncrementalAlterConfigs", 45: "AlterPartitionReassignments",
    47: "OffsetDelete", 49: "AlterClientQuotas", 51: "AlterUserScramCredentials", 57: "UpdateFeatures",
    68: "ConsumerGroupHeartbeat", 76: "ShareGroupHeartbeat", 88: "StreamsGroupHeartbeat",
}
METADATA, CREATE_TOPICS = 3, 19
# Cluster-wide changes: no drill makes one, whatever it names.
CLUSTER_APIS = frozenset({27, 30, 31, 34, 43, 45, 49, 51, 57})
# APIs that write nothing (reads, the handshake, telemetry): forwarded unread. Any API neither
# here nor read by the guard is refused as a change to the cluster, so one added to Kafka later
# (or a broker-to-broker one) fails closed.
READ_ONLY_APIS = frozenset({1, 2, 9, 10, 15, 16, 17, 18, 23, 29, 32, 35, 36, 41, 46, 48, 50, 55, 60, 61, 65, 66,
                            69, 71, 72, 75, 77})
# First flexible version of each request read here (compact strings and arrays, tagged fields).
FIRST_FLEXIBLE = {0: 9, 3: 9, 8: 8, 11: 6, 12: 4, 13: 4, 14: 4, 19: 5, 20: 4, 21: 2, 22: 2, 24: 3, 25: 3, 26: 3,
                  28: 3, 33: 2, 37: 2, 42: 2, 44: 1, 47: 99, 68: 0, 76: 0, 88: 0}
# The highest version of each API whose layout is read here. Produce stops at 9 (v13+ names
# topics by id), DeleteTopics at 5 and OffsetCommit at 8 (later ones may name topics by id), AddPartitionsToTxn at 3 (v4+ is
# the brokers' own batched form), Metadata at 12 (the auto-creation flag's place is known to it).
GUARDED_MAX_VERSION = {0: 9, 3: 12, 8: 8, 11: 9, 12: 4, 13: 5, 14: 5, 19: 7, 20: 5, 21: 2, 22: 5, 24: 3, 25: 4,
                       26: 4, 28: 4, 30: 3, 31: 3, 33: 2, 37: 3, 42: 2, 44: 1, 47: 0, 68: 0, 76: 1, 88: 0}
# ConfigResource types (AlterConfigs/IncrementalAlterConfigs)
TOPIC_RESOURCE, GROUP_RESOURCE = 2, 32


@dataclass(frozen=True)
class Write:
    kind: str  # "topic", "group", "transactional id", or "cluster" (a change to the cluster itself)
    name: str


@dataclass(frozen=True)
class Refusal:
    api_key: int
    api_version: int
    write: Write
    reason: str
    read: bool = True  # False: the request's layout was not read, so no answer can be built for it

    @property
    def api(self) -> str:
        return API_NAMES.get(self.api_key, f"api {self.api_key}")


@dataclass(frozen=True)
class Owner:
    """The owned-name rule of one drill."""

    prefix: str

    def owns(self, write: Write) -> bool:
        if write.kind == "topic":
            return owned_topic(write.name, self.prefix)
        if write.kind in ("group", "transactional id"):
            return write.name.startswith(self.prefix)
        return False  # the cluster itself is never the drill's

    def why_not(self, write: Write) -> str:
        if write.kind == "cluster":
            return "a drill changes nothing of the cluster itself (ACLs, quotas, replicas, broker settings)"
        return f"the drill owns only names starting with {self.prefix!r}"


def body_reader(frame: bytes, flexible: bool) -> Reader:
    """A reader at the request body: past api key, version, correlation id, client id (and tags)."""
    r = Reader(frame, 8)
    r.string(False)  # client_id is a classic nullable string in every header version
    if flexible:
        r.tagged_fields()
    return r


def _array(r: Reader, flexible: bool, item: Callable[[Reader], object]) -> None:
    for _ in range(max(r.array_len(flexible), 0)):
        item(r)
        if flexible:
            r.tagged_fields()


def _bytes(r: Reader, flexible: bool) -> None:
    n = r.uvarint() - 1 if flexible else r.int32()
    if n > 0:
        r.skip(n)


def _topics(r: Reader, flexible: bool, rest: Callable[[Reader], None]) -> list[Write]:
    """An array of entries that start with a topic name, ``rest`` reading each entry's other fields."""
    out: list[Write] = []

    def entry(rd: Reader) -> None:
        out.append(Write("topic", rd.string(flexible) or ""))
        rest(rd)
    _array(r, flexible, entry)
    return out


def _txn_id(name: str | None) -> list[Write]:
    return [] if name is None else [Write("transactional id", name)]


def _produce(r: Reader, v: int, f: bool) -> list[Write]:
    txn = _txn_id(r.string(f)) if v >= 3 else []
    r.int16(), r.int32()  # acks, timeout_ms

    def partition(p: Reader) -> None:
        p.int32()  # index
        _bytes(p, f)  # records

    def partitions(rd: Reader) -> None:
        _array(rd, f, partition)
    return txn + _topics(r, f, partitions)


def _create_topics(r: Reader, v: int, f: bool) -> list[Write]:
    def assignment(a: Reader) -> None:
        a.int32()  # partition
        _int32s(a, f)  # broker ids

    def rest(rd: Reader) -> None:
        rd.int32(), rd.int16()  # num_partitions, replication_factor
        _array(rd, f, assignment)
        _array(rd, f, lambda c: (c.string(f), c.string(f)))
    return _topics(r, f, rest)


def _int32s(r: Reader, flexible: bool) -> None:
    for _ in range(max(r.array_len(flexible), 0)):
        r.int32()


def _delete_topics(r: Reader, v: int, f: bool) -> list[Write]:
    count = r.array_len(f)
    return [Write("topic", r.string(f) or "") for _ in range(max(count, 0))]


def _create_partitions(r: Reader, v: int, f: bool) -> list[Write]:
    def rest(rd: Reader) -> None:
        rd.int32()  # count
        _array(rd, f, lambda a: _int32s(a, f))  # assignments (nullable)
    return _topics(r, f, rest)


def _delete_records(r: Reader, v: int, f: bool) -> list[Write]:
    def partition(p: Reader) -> None:
        p.int32()  # index
        p.skip(8)  # offset
    return _topics(r, f, lambda rd: _array(rd, f, partition))


def config_resources(r: Reader, f: bool, incremental: bool) -> list[tuple[int, str]]:
    """(resource type, name) of each resource of an (Incremental)AlterConfigs request."""
    out: list[tuple[int, str]] = []

    def resource(rd: Reader) -> None:
        out.append((rd.int8(), rd.string(f) or ""))
        _array(rd, f, lambda c: (c.string(f), c.int8() if incremental else None, c.string(f)))
    _array(r, f, resource)
    return out


def _configs(r: Reader, v: int, f: bool, incremental: bool) -> list[Write]:
    kinds = {TOPIC_RESOURCE: "topic", GROUP_RESOURCE: "group"}
    return [Write(kinds[t], name) if t in kinds else Write("cluster", f"config resource type {t} {name!r}")
            for t, name in config_resources(r, f, incremental)]


def _group_first(r: Reader, v: int, f: bool) -> list[Write]:
    return [Write("group", r.string(f) or "")]


def _txn_then_group(r: Reader, v: int, f: bool) -> list[Write]:
    return _txn_id(r.string(f)) + [Write("group", r.string(f) or "")]


def _add_offsets_to_txn(r: Reader, v: int, f: bool) -> list[Write]:
    txn = _txn_id(r.string(f))
    r.skip(10)  # producer_id int64, producer_epoch int16
    return txn + [Write("group", r.string(f) or "")]


def _add_partitions_to_txn(r: Reader, v: int, f: bool) -> list[Write]:
    txn = _txn_id(r.string(f))
    r.skip(10)
    return txn + _topics(r, f, lambda rd: _int32s(rd, f))


def _txn_first(r: Reader, v: int, f: bool) -> list[Write]:
    return _txn_id(r.string(f))


def _delete_groups(r: Reader, v: int, f: bool) -> list[Write]:
    count = r.array_len(f)
    return [Write("group", r.string(f) or "") for _ in range(max(count, 0))]


_WRITES: dict[int, Callable[[Reader, int, bool], list[Write]]] = {
    0: _produce, 19: _create_topics, 20: _delete_topics, 37: _create_partitions, 21: _delete_records,
    33: lambda r, v, f: _configs(r, v, f, False), 44: lambda r, v, f: _configs(r, v, f, True),
    8: _group_first, 11: _group_first, 12: _group_first, 13: _group_first, 14: _group_first, 47: _group_first,
    68: _group_first, 76: _group_first, 88: _group_first, 28: _txn_then_group, 25: _add_offsets_to_txn,
    42: _delete_groups, 22: _txn_first, 26: _txn_first, 24: _add_partitions_to_txn,
}


def writes(api_key: int, version: int, frame: bytes) -> list[Write]:
    """Every name a request writes (empty for an API that writes nothing guarded)."""
    read = _WRITES.get(api_key)
    if read is None:
        return [] if api_key in READ_ONLY_APIS or api_key == METADATA else [Write("cluster", _cluster_change(api_key))]
    flexible = version >= FIRST_FLEXIBLE[api_key]
    return read(body_reader(frame, flexible), version, flexible)


def _cluster_change(api_key: int) -> str:
    if api_key in CLUSTER_APIS:
        return "the cluster's ACLs, quotas, replicas or features"
    return "an API the guard does not know as read-only"


def check(owner: Owner, api_key: int, version: int, frame: bytes) -> Refusal | None:
    """The refusal of a request that writes outside what ``owner`` owns, or None to forward it."""
    if api_key in READ_ONLY_APIS or api_key == METADATA:
        return None
    top = GUARDED_MAX_VERSION.get(api_key)
    if top is not None and version > top:
        return Refusal(api_key, version, Write("cluster", f"version {version}"),
                       f"the proxy reads {API_NAMES[api_key]} only up to version {top}", read=False)
    try:
        found = writes(api_key, version, frame)
    except (WireError, UnicodeDecodeError) as e:
        return Refusal(api_key, version, Write("cluster", "an unreadable request"), f"it could not be read: {e}", read=False)
    for write in found:
        if not owner.owns(write):
            return Refusal(api_key, version, write, owner.why_not(write))
    return None


def expects_response(api_key: int, version: int, frame: bytes) -> bool:
    """False only for Produce with acks=0, which the broker never answers."""
    if api_key != 0 or version > GUARDED_MAX_VERSION[0]:
        return True
    try:
        r = body_reader(frame, version >= FIRST_FLEXIBLE[0])
        if version >= 3:
            r.string(version >= FIRST_FLEXIBLE[0])
        return r.int16() != 0
    except WireError:
        return True


def without_auto_creation(owner: Owner, version: int, frame: bytes) -> bytes | Refusal:
    """A Metadata request with allow_auto_topic_creation off when it names a topic not owned.

    Before v4 the broker's own setting decides, so such a request is refused instead.
    """
    if version > GUARDED_MAX_VERSION[METADATA]:
        return Refusal(METADATA, version, Write("cluster", f"version {version}"),
                       f"the proxy reads Metadata only up to version {GUARDED_MAX_VERSION[METADATA]}", read=False)
    f = version >= FIRST_FLEXIBLE[METADATA]
    r = body_reader(frame, f)
    names: list[str] = []

    def topic(rd: Reader) -> None:
        if version >= 10:
            rd.skip(16)  # topic_id
        name = rd.string(f)
        if name is not None:
            names.append(name)
    _array(r, f, topic)
    unowned = [n for n in names if not owner.owns(Write("topic", n))]
    if not unowned:
        return frame
    if version < 4:
        return Refusal(METADATA, version, Write("topic", unowned[0]),
                       "Metadata before v4 lets the broker create it; " + owner.why_not(Write("topic", "")))
    if frame[r.pos] == 0:
        return frame
    return frame[:r.pos] + b"\x00" + frame[r.pos + 1:]


def describe(record: dict) -> str:
    """One plain line for a refusal record (the proxy's log and the drill's failure say the same)."""
    what = (f"({record['name']})" if record["kind"] == "cluster" else f"to {record['kind']} {record['name']!r}")
    return (f"the Kafka proxy in front of {record['cluster']} refused {record['api']} {what} from "
            f"{record['client']}: {record['reason']}")
