"""MirrorMaker 2's exactly-once mode, killed mid-load: what read_committed consumers see.

Fresh clusters on purpose: the shared ones' MM2 Connect groups (same aliases) run at-least-once,
and a worker joins exactly-once mode cleanly only from a fresh start (or through 'preparing').
"""

from __future__ import annotations

import collections
import time
import uuid

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
from confluent_kafka.admin import NewTopic

from harness.environment import Environment, TopologySpec
from harness.kafka.cluster import ClusterSpec
from harness.replicators.mirrormaker2 import MirrorMaker2Replicator
from harness.replicators.setup import FlowSpec, ReplicationSetup
from primitives.kafka.reading import watermarks

from .kafka_helpers import wait_for
from .resume_helpers import SteadyLoad

pytestmark = pytest.mark.integration

PARTITIONS = 3


def read_all(bootstrap: str, topic: str, isolation: str) -> tuple[collections.Counter, int]:
    """(every value's count, the log's end offsets summed) of ``topic``, read at ``isolation``.

    Reads until each partition's position reaches its end: transaction markers take offsets
    that no record is returned for, so counting records up to the end would never finish."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"test-{uuid.uuid4().hex[:6]}",
                  "enable.auto.commit": False, "isolation.level": isolation, "log_level": 0})
    try:
        ends = {p: high for p, (_, high) in watermarks(c, topic, range(PARTITIONS)).items()}
        parts = [TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)]
        c.assign(parts)
        counts: collections.Counter = collections.Counter()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            for m in c.consume(num_messages=1000, timeout=0.5):
                if not m.error():
                    counts[m.value()] += 1
            positions = {tp.partition: tp.offset for tp in c.position([TopicPartition(topic, p) for p in range(PARTITIONS)])}
            if all(positions[p] >= ends[p] for p in ends):
                return counts, sum(ends.values())
        raise TimeoutError(f"{topic} not read to its end ({ends}) at {isolation} in 60s")
    finally:
        c.close()


def test_exactly_once_mode_copies_each_record_once_for_read_committed_across_a_kill(artifacts, tmp_path, lab_backend):
    spec = TopologySpec(clusters=(ClusterSpec("north"), ClusterSpec("south")))
    with Environment(spec, tmp_path / "env", artifacts, backend=lab_backend.make("mm2-eos")) as env:
        north, south = env.cluster("north"), env.cluster("south")
        north.create_topics([NewTopic("orders", PARTITIONS, 1)])
        setup = ReplicationSetup(env=env, flows=[FlowSpec("north", "south", topics=["orders"])],
                                 workdir=tmp_path / "mm2")
        with MirrorMaker2Replicator(setup, exactly_once=True, artifacts=artifacts) as mm2:
            remote = mm2.remote_topic("north", "orders")
            with SteadyLoad(north.bootstrap, "orders", "eos", count=3000, rate=150) as load:
                # killed while it copies: the open transaction dies with it
                wait_for(lambda: sum(read_all(south.bootstrap, remote, "read_uncommitted")[0].values()) > 300
                         if remote in south.admin().list_topics(timeout=15).topics else False,
                         120, "copying under way")
                mm2.kill()
                time.sleep(3)  # records keep arriving on north while MM2 is down
                mm2.start()
            expected = set(load.values)
            wait_for(lambda: expected <= set(read_all(south.bootstrap, remote, "read_committed")[0]), 180,
                     f"all {len(expected)} records committed in {remote}")
            time.sleep(5)  # a copy written twice would land within a poll or two
            committed, end_offsets = read_all(south.bootstrap, remote, "read_committed")
            uncommitted, _ = read_all(south.bootstrap, remote, "read_uncommitted")
    twice = {v: n for v, n in committed.items() if n > 1}
    print(f"\n{len(expected)} produced; read_committed: {sum(committed.values())} records, {len(twice)} twice; "
          f"read_uncommitted: {sum(uncommitted.values())} records "
          f"({sum(uncommitted.values()) - sum(committed.values())} aborted copies); log end offsets {end_offsets}")
    assert set(committed) == expected, "only produced records, and every one of them"
    assert not twice, f"{len(twice)} records copied twice for read_committed, e.g. {list(twice.items())[:5]}"
    # the writes were transactions: each commit's marker takes an offset no record holds
    assert end_offsets > sum(uncommitted.values())
