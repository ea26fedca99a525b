"""The proxy's own answer to a refused request: the API's response with an authorization error.

A client that gets TOPIC/GROUP/CLUSTER/TRANSACTIONAL_ID_AUTHORIZATION_FAILED stops and reports
it (MirrorMaker 2 logs and goes on without a topic it may not create); a closed connection
would only make it retry. APIs without an answer here (``answer`` returns None) get their
connection closed instead. Layouts are those of Kafka's *Response.json message definitions.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass, field

from mirrordrill.harness.lab.network.kafka_proxy import guard
from mirrordrill.harness.lab.network.kafka_proxy.guard import Refusal, body_reader
from mirrordrill.harness.lab.network.kafka_proxy.wire import Reader, array_len, string

TOPIC_AUTHORIZATION_FAILED, GROUP_AUTHORIZATION_FAILED = 29, 30
CLUSTER_AUTHORIZATION_FAILED, TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 31, 53
NOT_LEADER_OR_FOLLOWER = 6  # for the owned partitions of a refused Produce: the client retries them alone
ERROR_OF_KIND = {"topic": TOPIC_AUTHORIZATION_FAILED, "group": GROUP_AUTHORIZATION_FAILED,
                 "transactional id": TRANSACTIONAL_ID_AUTHORIZATION_FAILED, "cluster": CLUSTER_AUTHORIZATION_FAILED}
REFUSED_BY = "refused by mirrordrill's Kafka proxy"


def _message(refusal: Refusal) -> str:
    """The error message of a refused request's answer, where its layout has one."""
    return f"{REFUSED_BY}: {refusal.reason}"


@dataclass
class _Body:
    """A response body being written, flexible or not."""

    flexible: bool
    out: bytearray = field(default_factory=bytearray)

    def _put(self, fmt: str, v: int) -> _Body:
        self.out += struct.pack(fmt, v)
        return self

    def i8(self, v: int) -> _Body:
        return self._put(">b", v)

    def i16(self, v: int) -> _Body:
        return self._put(">h", v)

    def i32(self, v: int) -> _Body:
        return self._put(">i", v)

    def i64(self, v: int) -> _Body:
        return self._put(">q", v)

    def s(self, v: str | None) -> _Body:
        self.out += string(v, self.flexible)
        return self

    def n(self, count: int) -> _Body:
        self.out += array_len(count, self.flexible)
        return self

    def tags(self) -> _Body:
        if self.flexible:
            self.out += b"\x00"
        return self


def _produce_topics(r: Reader, f: bool) -> list[tuple[str, list[int]]]:
    """(topic, partitions) of a Produce request, the reader past acks and timeout."""
    topics: list[tuple[str, list[int]]] = []
    for _ in range(max(r.array_len(f), 0)):
        name, parts = r.string(f) or "", []
        for _ in range(max(r.array_len(f), 0)):
            parts.append(r.int32())
            size = r.uvarint() - 1 if f else r.int32()
            r.skip(max(size, 0))
            if f:
                r.tagged_fields()
        if f:
            r.tagged_fields()
        topics.append((name, parts))
    return topics


def _produce(b: _Body, v: int, frame: bytes, refusal: Refusal, owner: guard.Owner) -> bool:
    r = body_reader(frame, b.flexible)
    if v >= 3:
        r.string(b.flexible)  # transactional_id
    if r.int16() == 0:
        return False  # acks=0: the client waits for no answer
    r.int32()
    message = _message(refusal)
    b.n(len(topics := _produce_topics(r, b.flexible)))
    for name, parts in topics:
        if refusal.write.kind == "transactional id":
            code = TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        else:
            code = NOT_LEADER_OR_FOLLOWER if owner.owns(guard.Write("topic", name)) else TOPIC_AUTHORIZATION_FAILED
        b.s(name).n(len(parts))
        for p in parts:
            b.i32(p).i16(code).i64(-1)
            if v >= 2:
                b.i64(-1)
            if v >= 5:
                b.i64(-1)
            if v >= 8:
                b.n(0).s(message if code != NOT_LEADER_OR_FOLLOWER else None)
            b.tags()
        b.tags()
    if v >= 1:
        b.i32(0)
    return True


def _topic_names(b: _Body, api_key: int, v: int, frame: bytes, throttle_from: int) -> list[str]:
    """The topics a CreateTopics/DeleteTopics request names, after writing what precedes their results:
    the throttle time (from version ``throttle_from``) and the results' count."""
    names = [w.name for w in guard.writes(api_key, v, frame)]
    if v >= throttle_from:
        b.i32(0)
    b.n(len(names))
    return names


def _create_topics(b: _Body, v: int, frame: bytes, refusal: Refusal, owner: guard.Owner) -> bool:
    for name in _topic_names(b, 19, v, frame, throttle_from=2):
        b.s(name)
        if v >= 7:
            b.out += bytes(16)  # topic_id: none
        b.i16(TOPIC_AUTHORIZATION_FAILED)  # an owned name in the same request too: the request is one
        if v >= 1:
            b.s(_message(refusal))
        if v >= 5:
            b.i32(-1).i16(-1).n(-1)  # num_partitions, replication_factor, configs: unknown
        b.tags()
    return True


def _delete_topics(b: _Body, v: int, frame: bytes, refusal: Refusal, owner: guard.Owner) -> bool:
    for name in _topic_names(b, 20, v, frame, throttle_from=1):
        b.s(name).i16(TOPIC_AUTHORIZATION_FAILED)
        if v >= 5:
            b.s(_message(refusal))
        b.tags()
    return True


def _named_results(api_key: int, with_message: bool):
    """CreatePartitions and DeleteGroups: throttle time, then (name, error code[, message]) per name."""
    def answer(b: _Body, v: int, frame: bytes, refusal: Refusal, owner: guard.Owner) -> bool:
        found = guard.writes(api_key, v, frame)
        b.i32(0).n(len(found))
        for write in found:
            b.s(write.name).i16(ERROR_OF_KIND[write.kind])
            if with_message:
                b.s(_message(refusal))
            b.tags()
        return True
    return answer


def _acls(b: _Body, v: int, frame: bytes, refusal: Refusal, owner: guard.Owner, delete: bool) -> bool:
    count = body_reader(frame, b.flexible).array_len(b.flexible)
    b.i32(0).n(max(count, 0))
    for _ in range(max(count, 0)):
        b.i16(CLUSTER_AUTHORIZATION_FAILED).s(f"{REFUSED_BY}: a drill changes no ACL")
        if delete:
            b.n(0)  # matching_acls
        b.tags()
    return True


def _configs(b: _Body, v: int, frame: bytes, refusal: Refusal, owner: guard.Owner, incremental: bool) -> bool:
    resources = guard.config_resources(body_reader(frame, b.flexible), b.flexible, incremental)
    b.i32(0).n(len(resources))
    for kind, name in resources:
        code = {guard.TOPIC_RESOURCE: TOPIC_AUTHORIZATION_FAILED,
                guard.GROUP_RESOURCE: GROUP_AUTHORIZATION_FAILED}.get(kind, CLUSTER_AUTHORIZATION_FAILED)
        b.i16(code).s(_message(refusal)).i8(kind).s(name).tags()
    return True


def _offset_commit(b: _Body, v: int, frame: bytes, refusal: Refusal, owner: guard.Owner) -> bool:
    r, f = body_reader(frame, b.flexible), b.flexible
    r.string(f)  # group_id
    if v >= 1:
        r.int32(), r.string(f)  # generation_id, member_id
    if v >= 7:
        r.string(f)  # group_instance_id
    if 2 <= v <= 4:
        r.skip(8)  # retention_time_ms
    if v >= 3:
        b.i32(0)
    b.n(count := max(r.array_len(f), 0))
    for _ in range(count):
        b.s(r.string(f)).n(parts := max(r.array_len(f), 0))
        for _ in range(parts):
            b.i32(r.int32()).i16(ERROR_OF_KIND[refusal.write.kind]).tags()
            r.skip(8 + (4 if v >= 6 else 0) + (8 if v == 1 else 0))  # offset, leader epoch, timestamp
            r.string(f)  # metadata
            if f:
                r.tagged_fields()
        if f:
            r.tagged_fields()
        b.tags()
    return True


def _group_error(b: _Body, v: int, refusal: Refusal) -> None:
    b.i16(ERROR_OF_KIND[refusal.write.kind])


def _join_group(b: _Body, v: int, frame: bytes, refusal: Refusal, owner: guard.Owner) -> bool:
    if v >= 2:
        b.i32(0)
    _group_error(b, v, refusal)
    b.i32(-1)  # generation_id
    if v >= 7:
        b.s(None).s(None)  # protocol_type, protocol_name
    else:
        b.s("")
    b.s("")  # leader
    if v >= 9:
        b.i8(0)  # skip_assignment
    b.s("").n(0)  # member_id, members
    return True


def _top_level_error(after: Callable[[_Body, int], object], throttle_from: int = 1):
    def answer(b: _Body, v: int, frame: bytes, refusal: Refusal, owner: guard.Owner) -> bool:
        if v >= throttle_from:
            b.i32(0)
        _group_error(b, v, refusal)
        after(b, v)
        return True
    return answer


def _sync_rest(b: _Body, v: int) -> None:
    if v >= 5:
        b.s(None).s(None)
    b.out += (b"\x01" if b.flexible else struct.pack(">i", 0))  # assignment: empty bytes


_ANSWERS = {
    0: _produce, 19: _create_topics, 20: _delete_topics, 11: _join_group, 8: _offset_commit,
    37: _named_results(37, with_message=True), 42: _named_results(42, with_message=False),
    33: lambda b, v, fr, rf, o: _configs(b, v, fr, rf, o, incremental=False),
    44: lambda b, v, fr, rf, o: _configs(b, v, fr, rf, o, incremental=True),
    30: lambda b, v, fr, rf, o: _acls(b, v, fr, rf, o, delete=False),
    31: lambda b, v, fr, rf, o: _acls(b, v, fr, rf, o, delete=True),
    12: _top_level_error(lambda b, v: None),
    13: _top_level_error(lambda b, v: b.n(0) if v >= 3 else None),
    14: _top_level_error(_sync_rest),
    22: _top_level_error(lambda b, v: b.i64(-1).i16(-1), throttle_from=0),
}
ACL_FLEXIBLE = {30: 2, 31: 2}


def answer(refusal: Refusal, correlation_id: int, frame: bytes, owner: guard.Owner) -> bytes | None:
    """The response frame (without its size) for a refused request; None: close the connection instead.

    A refusal of an unread version has no answer (its layout is unknown); nor has Produce with acks=0.
    """
    build = _ANSWERS.get(refusal.api_key)
    if build is None or not refusal.read:
        return None
    first = ACL_FLEXIBLE.get(refusal.api_key, guard.FIRST_FLEXIBLE.get(refusal.api_key, 99))
    body = _Body(refusal.api_version >= first)
    body.i32(correlation_id).tags()  # the response header (v1 for flexible versions)
    if not build(body, refusal.api_version, frame, refusal, owner):
        return None
    body.tags()
    return bytes(body.out)
