"""Topic creation that treats 'already exists' as success: the harness, the load and the doctor share it."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic


def create_topics(admin: AdminClient, topics: Iterable[NewTopic], timeout_s: float = 30.0) -> None:
    """Create ``topics`` and wait for each; one that already exists is fine, any other error raises.

    The caller keeps ``admin`` alive until this returns: librdkafka destroys a handle's
    futures with it.
    """
    wanted = list(topics)
    futures = admin.create_topics(wanted, operation_timeout=timeout_s, request_timeout=timeout_s)
    created: dict[str, int] = {}
    for name, fut in futures.items():
        try:
            fut.result(timeout=timeout_s + 5)
            created[name] = next(t.num_partitions for t in wanted if t.topic == name)
        except KafkaException as e:
            if e.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise
    _wait_until_visible(admin, created, timeout_s)


def _wait_until_visible(admin: AdminClient, topics: Mapping[str, int], timeout_s: float) -> None:
    """Block until metadata shows each created topic with its partitions.

    A KRaft controller answers CreateTopics once the topic is committed; a broker applies that
    record a moment later, so a metadata request sent at once can still say "unknown topic"
    (MirrorMaker 1's adapter then saw no topic to make a copy of).
    """
    deadline = time.monotonic() + timeout_s
    pending = dict(topics)
    while pending:
        for name, count in list(pending.items()):
            # one topic per request: a team's cluster may hold thousands
            found = admin.list_topics(name, timeout=max(1.0, deadline - time.monotonic())).topics.get(name)
            if found is not None and found.error is None and (count < 1 or len(found.partitions) == count):
                del pending[name]  # below 1 partitions: the broker's default, any count will do
        if pending and time.monotonic() > deadline:
            raise TimeoutError(f"topics created but not in metadata after {timeout_s:.0f}s: {', '.join(sorted(pending))}")
        if pending:
            time.sleep(0.1)


def partition_leader(bootstrap: str, topic: str, partition: int, timeout_s: float = 30.0,
                     security: Mapping[str, str] | None = None) -> int:
    """The node id leading ``topic``/``partition`` now, asking again while it has none (an election)."""
    admin = AdminClient({"bootstrap.servers": bootstrap, **(security or {}), "log_level": 0})
    deadline = time.monotonic() + timeout_s
    while True:
        left = max(1.0, deadline - time.monotonic())
        found = admin.list_topics(topic, timeout=left).topics.get(topic)
        if found is not None and found.error is None:
            if partition not in found.partitions:
                raise ValueError(f"{topic} has partitions 0..{len(found.partitions) - 1}, not {partition}")
            leader = found.partitions[partition].leader
            if leader >= 0:
                return leader
        if time.monotonic() >= deadline:
            raise TimeoutError(f"no leader for {topic}/{partition} at {bootstrap} within {timeout_s:g}s")
        time.sleep(0.2)
