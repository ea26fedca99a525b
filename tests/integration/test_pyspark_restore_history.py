"""A failback's copy back restores the wiped primary's history under its original names (real brokers).

East stands for the DR cluster after a failover: it holds ``west.<topic>`` (west's records it
mirrored before the incident) and its own ``<topic>`` (written after). West stands for the wiped
old primary. A flow east -> west with ``mirrordrill.restore.history`` must write ``west.<topic>``
back into west's ``<topic>`` -- every record once, each at the offset it has on east (which
re-protect relies on) -- and east's own ``<topic>`` into ``east.<topic>`` as usual, and touch no
other ``west.*`` topic. Once the switch back has happened, the re-protect copies what west
writes again into east's ``west.<topic>``: those records are not history (they lie beyond what
east held of it when the copy back started) and must not come back to west a second time,
whatever their timestamps, nor count as lag.
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka.admin import NewTopic

from mirrordrill.harness.drill.replicators.pyspark import PySparkReplicator
from mirrordrill.harness.drill.replicators.setup import FlowSpec, ReplicationSetup

from .kafka_helpers import read_records, unique_topic, values_in, wait_for
from .resume_helpers import exactly_once, produce

pytestmark = pytest.mark.integration


def test_restore_flow_writes_history_back_under_original_names_at_the_same_offsets(wan_env, artifacts):
    east, west = wan_env.cluster("east"), wan_env.cluster("west")
    topic, unselected = unique_topic("restore"), unique_topic("restore-other")
    east.create_topics([NewTopic(f"west.{topic}", 2, 1), NewTopic(topic, 2, 1), NewTopic(f"west.{unselected}", 1, 1)])
    history = [f"history-{i}".encode() for i in range(400)]
    after = [f"after-{i}".encode() for i in range(100)]
    produce(east.bootstrap, f"west.{topic}", history)
    produce(east.bootstrap, topic, after)
    produce(east.bootstrap, f"west.{unselected}", [b"not-mine"])
    flow = FlowSpec("east", "west", topics=[topic], settings={"mirrordrill.restore.history": "true"})
    setup = ReplicationSetup(env=wan_env, flows=[flow], workdir=wan_env.workdir / "pyspark-restore-history")
    with PySparkReplicator(setup, mode="realtime", artifacts=artifacts) as replicator:
        exactly_once(west, topic, 2, history)
        exactly_once(west, f"east.{topic}", 2, after)
        # the re-protect at work: west's new records arrive in east's copy of west's topic, with the
        # timestamps they were written with (a re-protect that starts a partition over copies old ones)
        looped, later = [f"re-protected-{i}".encode() for i in range(50)], [f"later-{i}".encode() for i in range(50)]
        produce(east.bootstrap, f"west.{topic}", looped, timestamp_ms=int(time.time() * 1000) - 3_600_000)
        produce(east.bootstrap, topic, later)
        exactly_once(west, f"east.{topic}", 2, after + later)  # the flow went on past the looped records
        assert sorted(values_in(west, topic)) == sorted(history), "records written after the history came back"
        wait_for(lambda: (m := replicator.metrics()) is not None and m.total_lag() == 0, 30,
                 "lag 0: records after the history are not waiting to be copied")
    for p in range(2):
        on_east = [m.value() for m in read_records(east.bootstrap, f"west.{topic}", 2)
                   if m.partition() == p and m.value().startswith(b"history-")]
        on_west = {m.offset(): m.value() for m in read_records(west.bootstrap, topic, 2) if m.partition() == p}
        assert on_west == dict(enumerate(on_east)), f"partition {p}: restored records are not at their offsets"
    # a topic the flow does not select is neither restored nor copied (its name is a cycle)
    assert values_in(west, unselected) == [] and values_in(west, f"east.west.{unselected}") == []
