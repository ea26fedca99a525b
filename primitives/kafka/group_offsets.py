"""A consumer group's committed offsets, read and written through a consumer carrying the group's id.

Why not the admin client's group calls (``list_consumer_group_offsets``, ``describe_consumer_groups``,
``alter_consumer_group_offsets``): while a group's coordinator restarts or moves (a broker-kill
drill), librdkafka aborts or crashes the whole process in them: an assertion in its coordinator
request path (``rd_kafka_enq_once_del_source_return``, librdkafka PR #5397) or a SIGSEGV handing a
NOT_COORDINATOR answer to a group handle an admin client does not have (``rd_kafka_cgrp_op``, issue
#5040, PR #5318); seen with confluent-kafka 2.16.1 / librdkafka 2.16.0, in three rounds of three.
A consumer sends the same requests through its own group handle, which finds the new coordinator.
It never subscribes, so it never joins the group or disturbs its members; its commits are those of
a consumer without group management (generation -1), which the brokers refuse while the group has
members, as they refuse the admin client's.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

# Internal topics of the brokers themselves: no application commits offsets of these.
_BROKER_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})
TopicFilter = Callable[[str], bool]


class GroupOffsets:
    """One group's commits on one cluster; close it (or use ``group_offsets``) when done."""

    def __init__(self, conf: Mapping[str, str], group: str) -> None:
        self.group = group
        self._results: list[tuple[KafkaError | None, list[TopicPartition]]] = []
        self._consumer = Consumer({"log_level": 0, **conf, "group.id": group, "enable.auto.commit": False,
                                   "on_commit": lambda err, tps: self._results.append((err, tps))})

    def committed(self, topics: TopicFilter | None = None, timeout_s: float = 15.0) -> dict[tuple[str, int], int]:
        """``{(topic, partition): offset}`` the group has committed, for every topic ``topics`` accepts
        (all but the brokers' own when None); partitions without a commit are left out. Raises
        ``KafkaException`` when the cluster or the group's coordinator does not answer in time."""
        metadata = self._consumer.list_topics(timeout=timeout_s)
        partitions = [TopicPartition(name, p) for name, topic in sorted(metadata.topics.items())
                      if topic.error is None and name not in _BROKER_TOPICS and (topics is None or topics(name))
                      for p in sorted(topic.partitions)]
        if not partitions:
            return {}
        return {(tp.topic, tp.partition): tp.offset for tp in self._consumer.committed(partitions, timeout=timeout_s)
                if tp.error is None and tp.offset >= 0}

    def commit(self, offsets: Mapping[tuple[str, int], int], timeout_s: float = 15.0) -> None:
        """Commit ``offsets`` for the group. Raises ``KafkaException`` when the brokers refuse (the
        group has members: they own its offsets) or do not answer within ``timeout_s``."""
        self._results.clear()
        # asynchronous: a synchronous commit waits without end for a coordinator that is not there
        self._consumer.commit(offsets=[TopicPartition(t, p, o) for (t, p), o in sorted(offsets.items())],
                              asynchronous=True)
        deadline = time.monotonic() + timeout_s
        while not self._results:
            if time.monotonic() >= deadline:
                raise KafkaException(KafkaError(KafkaError._TIMED_OUT, f"committing offsets of group {self.group}"))
            self._consumer.poll(0.1)  # serves the commit's callback; nothing is assigned, so no record comes
        err, tps = self._results[0]
        failed = [tp.error for tp in tps if tp.error is not None]
        if err is not None or failed:
            raise KafkaException(err if err is not None else failed[0])

    def close(self) -> None:
        self._consumer.close()


@contextmanager
def group_offsets(conf: Mapping[str, str], group: str) -> Iterator[GroupOffsets]:
    handle = GroupOffsets(conf, group)
    try:
        yield handle
    finally:
        handle.close()


def committed_offsets(conf: Mapping[str, str], group: str, topics: TopicFilter | None = None,
                      timeout_s: float = 15.0) -> dict[tuple[str, int], int]:
    """``group``'s commits on the cluster ``conf`` reaches (``GroupOffsets.committed``)."""
    with group_offsets(conf, group) as handle:
        return handle.committed(topics, timeout_s)
