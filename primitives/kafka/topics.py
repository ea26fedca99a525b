"""Topic creation that treats 'already exists' as success: the harness, the load and the doctor share it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic


def create_topics(admin: AdminClient, topics: Iterable[NewTopic], timeout_s: float = 30.0) -> None:
    """Create ``topics`` and wait for each; one that already exists is fine, any other error raises.

    The caller keeps ``admin`` alive until this returns: librdkafka destroys a handle's
    futures with it.
    """
    futures = admin.create_topics(list(topics), operation_timeout=timeout_s, request_timeout=timeout_s)
    for fut in futures.values():
        try:
            fut.result(timeout=timeout_s + 5)
        except KafkaException as e:
            if e.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise


def partition_leader(bootstrap: str, topic: str, partition: int, timeout_s: float = 30.0,
                     security: Mapping[str, str] | None = None) -> int:
    """The node id leading ``topic``/``partition`` now, asking again while it has none (an election)."""
    import time
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
