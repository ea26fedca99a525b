"""A group's commits read and written through a consumer that never joins it (``primitives.kafka.group_offsets``)."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, KafkaException

from mirrordrill.primitives.kafka.group_offsets import committed_offsets, group_offsets

from .kafka_helpers import new_topic, unique_topic

pytestmark = pytest.mark.integration


def test_commits_are_written_and_read_per_partition_and_topic_filter(wan_env):
    east = wan_env.cluster("east")
    orders, other, group = unique_topic("orders"), unique_topic("other"), unique_topic("group")
    east.create_topics([new_topic(orders, partitions=3), new_topic(other)])
    conf = {"bootstrap.servers": east.bootstrap}
    with group_offsets(conf, group) as handle:
        handle.commit({(orders, 0): 5, (orders, 2): 7, (other, 0): 1})
    # partition 1 has no commit: left out, not -1
    assert committed_offsets(conf, group) == {(orders, 0): 5, (orders, 2): 7, (other, 0): 1}
    assert committed_offsets(conf, group, orders.__eq__) == {(orders, 0): 5, (orders, 2): 7}
    assert committed_offsets(conf, unique_topic("never-committed")) == {}


def test_the_brokers_refuse_a_commit_while_the_group_has_members(wan_env):
    west = wan_env.cluster("west")
    topic, group = unique_topic("owned"), unique_topic("active")
    west.create_topics([new_topic(topic)])
    conf = {"bootstrap.servers": west.bootstrap}
    member = Consumer({**conf, "group.id": group, "enable.auto.commit": False, "log_level": 0})
    try:
        member.subscribe([topic])
        deadline = time.monotonic() + 30
        while not member.assignment():
            assert time.monotonic() < deadline, "the member never got its partition"
            member.poll(0.2)
        with group_offsets(conf, group) as handle, pytest.raises(KafkaException):
            handle.commit({(topic, 0): 3})  # the application owns its offsets while it runs
        assert committed_offsets(conf, group) == {}
    finally:
        member.close()
    with group_offsets(conf, group) as handle:
        handle.commit({(topic, 0): 3})  # no member left: the offsets are anyone's to set
    assert committed_offsets(conf, group) == {(topic, 0): 3}
