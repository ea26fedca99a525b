"""MirrorMaker 2's exactly-once mode, killed mid-load: what read_committed consumers see.

Fresh clusters on purpose: the shared ones' MM2 Connect groups (same aliases) run at-least-once,
and a worker joins exactly-once mode cleanly only from a fresh start (or through 'preparing').
"""

from __future__ import annotations

import collections
import time
import uuid

import pytest
from confluent_kafka import Consumer
from confluent_kafka.admin import NewTopic

from mirrordrill.harness.drill.replicators.mirrormaker2 import MirrorMaker2Replicator
from mirrordrill.harness.drill.replicators.setup import FlowSpec, ReplicationSetup
from mirrordrill.harness.lab.brokers.cluster import ClusterSpec
from mirrordrill.harness.lab.environment import Environment, TopologySpec
from mirrordrill.primitives.kafka.reading import ends_after_last_record, read_topic, watermarks

from .kafka_helpers import wait_for
from .resume_helpers import SteadyLoad

pytestmark = pytest.mark.integration

PARTITIONS = 3


def read_all(cluster, topic: str, isolation: str) -> collections.Counter:
    """Every value's count in ``topic``, read at ``isolation``."""
    return collections.Counter(m.value() for m in read_topic(cluster.bootstrap, topic, isolation=isolation))


def watermarks_of(cluster, topic: str) -> dict[int, tuple[int, int]]:
    """Each partition's (log start, log end): a read_uncommitted consumer's high watermark, past every marker."""
    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": f"test-{uuid.uuid4().hex[:6]}",
                  "isolation.level": "read_uncommitted", "log_level": 0})
    try:
        return watermarks(c, topic, range(PARTITIONS))
    finally:
        c.close()


def copied(cluster, topic: str, isolation: str) -> set[bytes]:
    """The values in ``topic`` so far; none while MM2 has not created it yet."""
    if topic not in cluster.admin().list_topics(timeout=15).topics:
        return set()
    return set(read_all(cluster, topic, isolation))


def test_exactly_once_mode_copies_each_record_once_for_read_committed_across_a_kill(artifacts, tmp_path, lab_backend):
    spec = TopologySpec(clusters=(ClusterSpec("north"), ClusterSpec("south")))
    with Environment(spec, tmp_path / "env", artifacts, backend=lab_backend.make("mm2-eos")) as env:
        north, south = env.cluster("north"), env.cluster("south")
        north.create_topics([NewTopic("orders", PARTITIONS, 1)])
        setup = ReplicationSetup(env=env, flows=[FlowSpec("north", "south", topics=["orders"])],
                                 workdir=tmp_path / "mm2")
        # The killed worker's open transaction holds its offsets topic's read_committed end until the
        # broker aborts it at the producers' transaction timeout (60 s by default); the restarted
        # worker reads that topic before its tasks fence the old producer, so it waits that long.
        # 10 s bounds the wait; the abort and what read_committed sees are the same at any timeout.
        with MirrorMaker2Replicator(setup, exactly_once=True, artifacts=artifacts,
                                    worker_settings={"producer.transaction.timeout.ms": "10000"}) as mm2:
            remote = mm2.remote_topic("north", "orders")
            with SteadyLoad(north.bootstrap, "orders", "eos", count=3000, rate=150) as load:
                # killed while it copies: the open transaction dies with it
                wait_for(lambda: len(copied(south, remote, "read_uncommitted")) > 300, 120, "copying under way")
                mm2.kill()
                time.sleep(3)  # records keep arriving on north while MM2 is down
                mm2.start()
            expected = set(load.values)
            wait_for(lambda: expected <= copied(south, remote, "read_committed"), 180,
                     f"all {len(expected)} records committed in {remote}")
            time.sleep(5)  # a copy written twice would land within a poll or two
            committed = read_all(south, remote, "read_committed")
            uncommitted = read_all(south, remote, "read_uncommitted")
            ends = {p: high for p, (_, high) in watermarks_of(south, remote).items()}
            parts = [(remote, p) for p in range(PARTITIONS)]
            after_last = ends_after_last_record(south.bootstrap, parts)
            plain = ends_after_last_record(north.bootstrap, [("orders", p) for p in range(PARTITIONS)])
            north_ends = {p: high for p, (_, high) in watermarks_of(north, "orders").items()}
    twice = {v: n for v, n in committed.items() if n > 1}
    print(f"\n{len(expected)} produced; read_committed: {sum(committed.values())} records, {len(twice)} twice; "
          f"read_uncommitted: {sum(uncommitted.values())} records "
          f"({sum(uncommitted.values()) - sum(committed.values())} aborted copies); log ends {ends}, "
          f"one past the newest record {after_last}")
    assert set(committed) == expected, "only produced records, and every one of them"
    assert not twice, f"{len(twice)} records copied twice for read_committed, e.g. {list(twice.items())[:5]}"
    # the writes were transactions: each commit's marker takes an offset no record holds
    assert sum(ends.values()) > sum(uncommitted.values())
    # what a planned move translates a commit at the source's end to: one past the newest record,
    # below the last commit's marker (the log end would wait for a checkpoint that never comes)
    assert all(after_last[(remote, p)] < ends[p] for p in range(PARTITIONS)), (ends, after_last)
    # without transactions it is the log end
    assert plain == {("orders", p): end for p, end in north_ends.items()}
