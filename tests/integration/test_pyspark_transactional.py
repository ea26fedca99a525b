"""A transactional flow (``mirrordrill.transactional``): its copies are committed transactions, and
every query start fences the writers it replaces, so a writer paused past a restart lands nothing.

Both modes, against real brokers. The zombie is a real transactional producer holding a flow
partition's transactional id with an open transaction and records buffered, as a driver frozen
mid-write (SIGSTOP) holds them: the replicator's restart must abort them, and the zombie's later
commit must be refused.
"""

from __future__ import annotations

import collections
import time
import uuid
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import NewTopic

from mirrordrill.harness.drill.replicators.pyspark import PySparkReplicator
from mirrordrill.harness.drill.replicators.setup import FlowSpec, ReplicationSetup
from mirrordrill.primitives.kafka.reading import watermarks
from mirrordrill.replicator.headers import SOURCE_OFFSET_HEADER, source_offset_of
from mirrordrill.replicator.transactions import id_prefix, transactional_id

from .kafka_helpers import read_records, unique_topic, values_in, wait_for
from .resume_helpers import SteadyLoad, exactly_once

pytestmark = pytest.mark.integration

MODES = ("microbatch", "realtime")
TX_PREFIX = "it-"
# the copies' transaction timeout here: far beyond any wait below, so a killed driver's open
# transactions can end only by the restart's fence within the test, never by the broker's timeout
TX_TIMEOUT_S = 600


@pytest.fixture(scope="module", params=MODES)
def tx_repl(request, wan_env, artifacts):
    setup = ReplicationSetup(env=wan_env, flows=[FlowSpec("east", "west", topics=["ptx-.*"], settings={
        "mirrordrill.transactional": "true", "mirrordrill.transactional.id.prefix": TX_PREFIX,
        "producer.transaction.timeout.ms": str(TX_TIMEOUT_S * 1000)})],
        workdir=wan_env.workdir / f"pyspark-transactional-{request.param}")
    with PySparkReplicator(setup, mode=request.param, artifacts=artifacts) as r:
        yield r


def _new_topic(repl: PySparkReplicator, prefix: str, partitions: int) -> tuple[Any, Any, str, str]:
    """East, west, a new topic on east with ``partitions`` partitions, and its copy's name on west."""
    east, west = repl.setup.env.cluster("east"), repl.setup.env.cluster("west")
    topic = unique_topic(prefix)
    east.create_topics([NewTopic(topic, partitions, 1)])
    return east, west, topic, repl.remote_topic("east", topic)


def _uncommitted(bootstrap: str, topic: str, partitions: int) -> tuple[list, dict[int, int]]:
    """Every record in ``topic``, aborted ones included (read_uncommitted), and each partition's end offset."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"test-{uuid.uuid4().hex[:6]}",
                  "isolation.level": "read_uncommitted", "enable.auto.commit": False,
                  "enable.partition.eof": True, "log_level": 0})
    try:
        ends = {p: high for p, (_, high) in watermarks(c, topic, range(partitions)).items()}
        c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        out, ended = [], set()
        deadline = time.monotonic() + 30
        while len(ended) < partitions and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                ended.add(m.partition())
                continue
            out.append(m)
        assert len(ended) == partitions, f"read_uncommitted did not reach the end of {topic}"
        return out, ends
    finally:
        c.close()


def test_copies_are_committed_transactions_with_the_sinks_headers(tx_repl):
    east, west, topic, remote = _new_topic(tx_repl, "ptx-copy", 2)
    with SteadyLoad(east.bootstrap, topic, "copy", 600, rate=200) as load:
        pass
    exactly_once(west, remote, 2, load.values)
    source = {(m.partition(), m.offset()): m for m in read_records(east.bootstrap, topic, 2)}
    for m in read_records(west.bootstrap, remote, 2):
        origin = source[(m.partition(), source_offset_of(m.headers()))]
        assert m.value() == origin.value() and m.timestamp() == origin.timestamp()
        assert [k for k, _ in m.headers()] == [SOURCE_OFFSET_HEADER], "the timestamp header becomes the timestamp"
    # each partition ends in a commit marker (an offset no record holds): the copies are transactions
    uncommitted, ends = _uncommitted(west.bootstrap, remote, 2)
    assert len(uncommitted) == len(load.values)
    for p, end in ends.items():
        assert end > sum(1 for m in uncommitted if m.partition() == p), f"no commit marker in partition {p}"


def test_sigkill_and_restart_copy_every_record_once(tx_repl):
    east, west, topic, remote = _new_topic(tx_repl, "ptx-crash", 3)
    with SteadyLoad(east.bootstrap, topic, "crash", 3000, rate=200) as load:
        wait_for(lambda: len(values_in(west, remote)) >= 300, 300, "records flowing")
        tx_repl.kill()  # SIGKILL: open transactions left behind, to be aborted by the restart's fence
        killed = time.monotonic()
        # what read_committed readers see while the killed process's open transactions hold them: no
        # more until the restart aborts those (the broker's timeout, TX_TIMEOUT_S, is far off). Counted
        # before the restart: on a busy machine the restarted driver had copied the whole rest of the
        # load by the time it counted as ready, and a count taken then never grew
        n = len(values_in(west, remote))
        time.sleep(1)
        tx_repl.start()
        wait_for(lambda: len(values_in(west, remote)) > n, 30, "copies visible after the restart")
        assert time.monotonic() - killed < TX_TIMEOUT_S, "the broker's timeout, not the fence, ended the transactions"
    exactly_once(west, remote, 3, load.values)


def test_a_zombie_writer_is_fenced_by_the_restart(tx_repl):
    east, west, topic, remote = _new_topic(tx_repl, "ptx-zombie", 1)
    with SteadyLoad(east.bootstrap, topic, "zombie", 400, rate=200) as load:
        pass
    exactly_once(west, remote, 1, load.values)
    tx_repl.stop()
    # a frozen writer of partition 0: its transaction open, a record sent, not committed
    zombie = Producer({"bootstrap.servers": west.bootstrap, "log_level": 0,
                       "transactional.id": transactional_id(id_prefix(TX_PREFIX, "east", "west"), remote, 0)})
    zombie.init_transactions(30)
    zombie.begin_transaction()
    zombie.produce(remote, b"zombie-write", partition=0, headers=[(SOURCE_OFFSET_HEADER, (10**9).to_bytes(8, "big"))])
    zombie.flush(10)
    tx_repl.start()  # fences partition 0's id before reading where to resume
    with SteadyLoad(east.bootstrap, topic, "after", 200, rate=200) as after:
        pass
    exactly_once(west, remote, 1, load.values + after.values)
    zombie.produce(remote, b"zombie-late", partition=0)
    with pytest.raises(KafkaException):
        zombie.commit_transaction(10)
    committed = collections.Counter(m.value() for m in read_records(west.bootstrap, remote, 1))
    assert b"zombie-write" not in committed and b"zombie-late" not in committed
    assert b"zombie-write" in {m.value() for m in _uncommitted(west.bootstrap, remote, 1)[0]}, "it did write"
