"""The bundled PySpark replicator (local mode, on the host) copying between two container clusters."""

from __future__ import annotations

import pytest

from mirrordrill.harness.drill.checker.contract import FlowInput
from mirrordrill.harness.drill.checker.reference import check_flow
from mirrordrill.harness.drill.replicators.pyspark import PySparkReplicator
from mirrordrill.harness.drill.replicators.setup import FlowSpec, ReplicationSetup
from mirrordrill.loadgen import envelope
from mirrordrill.loadgen.histories.records import AckedSend, TargetRecord
from tests.integration.kafka_helpers import new_topic, produce_enveloped, read_records, unique_topic, values_in, wait_for

pytestmark = pytest.mark.integration

RECORDS, PARTITIONS = 3000, 3


@pytest.fixture(scope="module")
def repl(container_lab, artifacts):
    setup = ReplicationSetup(env=container_lab, flows=[FlowSpec("east", "west", topics=["ctr-.*"])],
                             workdir=container_lab.workdir / "pyspark-replicator")
    with PySparkReplicator(setup, artifacts=artifacts) as r:
        yield r


def acked_sends(bootstrap: str, cluster: str, topic: str) -> list[AckedSend]:
    """The ledger, read back from the source: every record there was acknowledged (acks=all)."""
    out = []
    for m in read_records(bootstrap, topic, PARTITIONS):
        env = envelope.decode(m)
        ts = m.timestamp()[1]
        out.append(AckedSend(cluster, topic, m.partition(), m.offset(), env.producer_id, env.seq,
                             env.send_ts_ms, ts, len(m.value()), env.checksum))
    return out


def target_records(bootstrap: str, cluster: str, topic: str) -> list[TargetRecord]:
    out = []
    for m in read_records(bootstrap, topic, PARTITIONS):
        env, ok = envelope.decode_verified(m)
        out.append(TargetRecord(cluster, topic, m.partition(), m.offset(), env.producer_id, env.seq,
                                m.timestamp()[1], ok, env.checksum))
    return out


def test_replicator_copies_between_container_clusters_exactly(repl):
    lab = repl.setup.env
    east, west = lab.cluster("east"), lab.cluster("west")
    topic = unique_topic("ctr-repl")
    east.create_topics([new_topic(topic, PARTITIONS)])
    acked = produce_enveloped(east.bootstrap, topic, "ctr", RECORDS, partitions=PARTITIONS)
    assert len(acked) == RECORDS
    remote = repl.remote_topic("east", topic)
    wait_for(lambda: len(values_in(west, remote)) >= RECORDS, 240, f"{RECORDS} records in {remote} on west")
    result = check_flow(FlowInput("east", "west", {remote: topic}, acked_sends(east.bootstrap, "east", topic),
                                  target_records(west.bootstrap, "west", remote), drained=True))
    assert (result.acked, result.replicated) == (RECORDS, RECORDS)
    assert (result.lost, result.duplicates, result.reordered, result.corrupted, result.unexpected) == (0, 0, 0, 0, 0)
