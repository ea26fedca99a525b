"""Heartbeats: proof of life of a flow on the target, in MM2's format and topic."""

from __future__ import annotations

import time

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from mirrordrill.replicator.checkpoints import ensure_internal_topic
from mirrordrill.replicator.mm2_format import Heartbeat


class HeartbeatEmitter:
    """Writes ``Heartbeat(source, target, now)`` to the target's heartbeats topic, as MM2 does."""

    def __init__(self, source_alias: str, target_alias: str, topic: str, target_admin: AdminClient,
                 producer: Producer, replication_factor: int):
        self.source_alias, self.target_alias, self.topic = source_alias, target_alias, topic
        self.admin, self.producer, self.replication_factor = target_admin, producer, replication_factor
        self._topic_ready = False

    def ensure_topic(self) -> None:
        if not self._topic_ready:
            ensure_internal_topic(self.admin, self.topic, self.replication_factor)
            self._topic_ready = True

    def now(self) -> Heartbeat:
        return Heartbeat(self.source_alias, self.target_alias, int(time.time() * 1000))

    def emit(self) -> Heartbeat:
        self.ensure_topic()
        hb = self.now()
        self.producer.produce(self.topic, key=hb.key(), value=hb.value())
        self.producer.poll(0)
        return hb
