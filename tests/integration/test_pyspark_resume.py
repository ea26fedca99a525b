"""The PySpark replicator resumes from the target: exactly once after SIGKILL, no replay when topics appear.

Both modes run against real brokers: records are produced steadily while the replicator is
killed (driver and its Spark, with records in flight) and started again, and the target must
then hold every source record exactly once.
"""

from __future__ import annotations

import collections
import threading
import time

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import NewTopic

from harness.replicators.pyspark import PySparkReplicator
from harness.replicators.setup import FlowSpec, ReplicationSetup

from .kafka_helpers import read_records, unique_topic, values_in, wait_for

pytestmark = pytest.mark.integration

BACKLOG_TOPIC = unique_topic("psr-backlog")  # has records before the replicator's first start
BACKLOG = [f"backlog-{i}".encode() for i in range(300)]


@pytest.fixture(scope="module", params=["microbatch", "realtime"])
def resume_repl(request, wan_env, artifacts):
    east = wan_env.cluster("east")
    east.create_topics([NewTopic(BACKLOG_TOPIC, 2, 1)])
    produce(east.bootstrap, BACKLOG_TOPIC, BACKLOG)
    setup = ReplicationSetup(env=wan_env, flows=[FlowSpec("east", "west", topics=["psr-.*"])],
                             workdir=wan_env.workdir / f"pyspark-resume-{request.param}")
    with PySparkReplicator(setup, mode=request.param, artifacts=artifacts) as r:
        yield r


def produce(bootstrap: str, topic: str, values: list[bytes], pause_s: float = 0.0) -> None:
    """Round-robin over partitions (no key); ``pause_s`` between records makes a steady flow."""
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True, "linger.ms": 5,
                  "log_level": 0})
    for v in values:
        p.produce(topic, v)
        p.poll(0)
        if pause_s:
            time.sleep(pause_s)
    assert p.flush(30) == 0


class SteadyLoad:
    """Produces ``count`` records at about ``rate`` per second in a thread."""

    def __init__(self, bootstrap: str, topic: str, prefix: str, count: int, rate: float):
        self.values = [f"{prefix}-{i}".encode() for i in range(count)]
        self._thread = threading.Thread(target=produce, args=(bootstrap, topic, self.values, 1.0 / rate))

    def __enter__(self) -> "SteadyLoad":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._thread.join(timeout=300)
        assert not self._thread.is_alive(), "the load did not finish"


def exactly_once(cluster, topic: str, partitions: int, expected: list[bytes]) -> None:
    """Wait for every expected record, give late copies time to land, then check there are none."""
    wait_for(lambda: set(expected) <= set(values_in(cluster, topic)), 180, f"all {len(expected)} records in {topic}")
    time.sleep(5)  # a duplicate written by a replay would land within a batch or two
    counts = collections.Counter(m.value() for m in read_records(cluster.bootstrap, topic, partitions))
    twice = {v: n for v, n in counts.items() if n > 1}
    assert not twice, f"{len(twice)} records copied more than once, e.g. {list(twice.items())[:5]}"
    assert set(counts) == set(expected)


def test_backlog_is_copied_once(resume_repl):
    west = resume_repl.setup.env.cluster("west")
    exactly_once(west, resume_repl.remote_topic("east", BACKLOG_TOPIC), 2, BACKLOG)


def test_sigkill_mid_load_and_restart_copies_every_record_once(resume_repl):
    east, west = resume_repl.setup.env.cluster("east"), resume_repl.setup.env.cluster("west")
    topic = unique_topic("psr-crash")
    east.create_topics([NewTopic(topic, 3, 1)])
    remote = resume_repl.remote_topic("east", topic)
    with SteadyLoad(east.bootstrap, topic, "crash", 4000, rate=200) as load:
        for kill in range(2):  # twice: once early in a query's life, once later
            wait_for(lambda: len(values_in(west, remote)) >= 300 * (kill + 1), 120, "records flowing")
            resume_repl.kill()  # SIGKILL: batches in flight, nothing flushed or committed
            assert not resume_repl.running
            time.sleep(2)
            resume_repl.start()
    exactly_once(west, remote, 3, load.values)


def test_new_topic_mid_flow_replays_nothing_and_is_copied(resume_repl):
    east, west = resume_repl.setup.env.cluster("east"), resume_repl.setup.env.cluster("west")
    busy, new = unique_topic("psr-busy"), unique_topic("psr-new")
    east.create_topics([NewTopic(busy, 2, 1)])
    busy_remote, new_remote = resume_repl.remote_topic("east", busy), resume_repl.remote_topic("east", new)
    with SteadyLoad(east.bootstrap, busy, "busy", 3000, rate=200) as load:
        wait_for(lambda: len(values_in(west, busy_remote)) >= 200, 120, "the busy topic flowing")
        east.create_topics([NewTopic(new, 2, 1)])
        created = time.monotonic()
        new_values = [f"new-{i}".encode() for i in range(100)]
        produce(east.bootstrap, new, new_values)
        wait_for(lambda: len(values_in(west, new_remote)) >= 100, 120, "the new topic copied")
        # a figure, not an assert (no timed asserts): the brief's bound is the refresh interval + 5 s
        print(f"\nnew topic copied {time.monotonic() - created:.1f}s after its creation")
    exactly_once(west, busy_remote, 2, load.values)
    exactly_once(west, new_remote, 2, new_values)
