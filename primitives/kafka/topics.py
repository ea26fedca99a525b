"""Topic creation that treats 'already exists' as success: the harness, the load and the doctor share it."""

from __future__ import annotations

from collections.abc import Iterable

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
