"""The PySpark replicator with the identity policy in active/active, starting from the latest offsets."""

from __future__ import annotations

import time

import pytest
from confluent_kafka.admin import NewTopic

from mirrordrill.harness.drill.replicators.pyspark import PySparkReplicator
from mirrordrill.harness.drill.replicators.setup import FlowSpec, ReplicationSetup
from mirrordrill.replicator.policy import PROVENANCE_HEADER

from .kafka_helpers import produce_values, read_records, topic_names, unique_topic, values_in, wait_for
from .resume_helpers import SteadyLoad, exactly_once

pytestmark = pytest.mark.integration

OLD_TOPIC = unique_topic("psi-old")  # holds records written before the replicator starts


@pytest.fixture(scope="module")
def identity_repl(wan_env, artifacts):
    east = wan_env.cluster("east")
    east.create_topics([NewTopic(OLD_TOPIC, 1, 1)])
    assert produce_values(east.bootstrap, OLD_TOPIC, [b"before-start"] * 50) == [None] * 50
    setup = ReplicationSetup(env=wan_env, flows=[
        # MM2's way of asking for only new records: the source consumer's auto.offset.reset
        FlowSpec("east", "west", topics=["psi-.*"], settings={"consumer.auto.offset.reset": "latest"}),
        FlowSpec("west", "east", topics=["psi-.*"]),
    ], policy="identity", workdir=wan_env.workdir / "pyspark-identity")
    with PySparkReplicator(setup, artifacts=artifacts) as r:
        yield r


def test_starting_from_latest_replicates_only_new_records(identity_repl):
    east, west = identity_repl.setup.env.cluster("east"), identity_repl.setup.env.cluster("west")
    wait_for(lambda: OLD_TOPIC in topic_names(west), 60, "the remote topic, same name under identity")

    # Spark fixes "latest" when the query's first batch runs, so keep writing until new records flow.
    def new_records_arrive():
        produce_values(east.bootstrap, OLD_TOPIC, [b"after-start"] * 10)
        return values_in(west, OLD_TOPIC)
    wait_for(new_records_arrive, 120, "new records", interval_s=2.0)
    produce_values(east.bootstrap, OLD_TOPIC, [b"last"] * 5)
    wait_for(lambda: b"last" in values_in(west, OLD_TOPIC), 120, "the last records")
    assert b"before-start" not in values_in(west, OLD_TOPIC)


def test_identity_active_active_does_not_loop(identity_repl):
    east, west = identity_repl.setup.env.cluster("east"), identity_repl.setup.env.cluster("west")
    topic = unique_topic("psi-aa")
    east.create_topics([NewTopic(topic, 1, 1)])
    produce_values(east.bootstrap, topic, [f"e{i}".encode() for i in range(30)])
    wait_for(lambda: len(values_in(west, topic)) == 30, 120, "east's records on west under the same name")
    produce_values(west.bootstrap, topic, [f"w{i}".encode() for i in range(10)])
    wait_for(lambda: len(values_in(east, topic)) == 40, 120, "west's own records back on east")
    time.sleep(10)  # two refresh intervals plus batches: a loop would have re-sent east's records by now
    east_values, west_values = values_in(east, topic), values_in(west, topic)
    assert sorted(east_values) == sorted([f"e{i}".encode() for i in range(30)] + [f"w{i}".encode() for i in range(10)])
    assert sorted(west_values) == sorted(east_values)
    replicated = [m for m in read_records(west.bootstrap, topic, 1) if m.value().startswith(b"e")]
    assert all(dict(m.headers())[PROVENANCE_HEADER] == b"east" for m in replicated)


def test_identity_kill_and_restart_copies_each_way_once_beside_local_writes(identity_repl):
    """Each target partition holds local records and the other side's copies: a flow finds its own
    newest copy by the provenance header, scanning back past the local ones."""
    east, west = identity_repl.setup.env.cluster("east"), identity_repl.setup.env.cluster("west")
    topic = unique_topic("psi-crash")
    east.create_topics([NewTopic(topic, 2, 1)])
    wait_for(lambda: topic in topic_names(west), 60, "the topic on west")
    with SteadyLoad(east.bootstrap, topic, "e", 2000, rate=100) as from_east, \
            SteadyLoad(west.bootstrap, topic, "w", 2000, rate=100) as from_west:
        wait_for(lambda: sum(v.startswith(b"e-") for v in values_in(west, topic)) >= 200, 120, "east->west flowing")
        identity_repl.kill()
        time.sleep(2)
        identity_repl.start()
    everything = from_east.values + from_west.values
    exactly_once(west, topic, 2, everything)
    exactly_once(east, topic, 2, everything)
