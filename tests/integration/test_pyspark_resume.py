"""The PySpark replicator resumes from the target: exactly once after SIGKILL, no replay when topics appear.

Both modes run against real brokers: records are produced steadily while the replicator is
killed (driver and its Spark, with records in flight) and started again, and the target must
then hold every source record exactly once.
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka.admin import NewTopic

from mirrordrill.harness.drill.replicators.pyspark import PySparkReplicator
from mirrordrill.harness.drill.replicators.setup import FlowSpec, ReplicationSetup

from .kafka_helpers import unique_topic, values_in, wait_for
from .resume_helpers import SteadyLoad, exactly_once, produce

pytestmark = pytest.mark.integration

MODES = ("microbatch", "realtime")
# Has records before the replicator's first start. One per mode: both modes' replicators run in
# the same clusters, and the same 300 values produced twice into one topic would read as copies.
BACKLOG_TOPICS = {mode: unique_topic(f"psr-backlog-{mode}") for mode in MODES}
BACKLOG = [f"backlog-{i}".encode() for i in range(300)]


@pytest.fixture(scope="module", params=MODES)
def resume_repl(request, wan_env, artifacts):
    east = wan_env.cluster("east")
    east.create_topics([NewTopic(BACKLOG_TOPICS[request.param], 2, 1)])
    produce(east.bootstrap, BACKLOG_TOPICS[request.param], BACKLOG)
    setup = ReplicationSetup(env=wan_env, flows=[FlowSpec("east", "west", topics=["psr-.*"])],
                             workdir=wan_env.workdir / f"pyspark-resume-{request.param}")
    with PySparkReplicator(setup, mode=request.param, artifacts=artifacts) as r:
        yield r


def test_backlog_is_copied_once(resume_repl):
    west = resume_repl.setup.env.cluster("west")
    exactly_once(west, resume_repl.remote_topic("east", BACKLOG_TOPICS[resume_repl.mode]), 2, BACKLOG)


def test_sigkill_mid_load_and_restart_copies_every_record_once(resume_repl):
    east, west = resume_repl.setup.env.cluster("east"), resume_repl.setup.env.cluster("west")
    topic = unique_topic("psr-crash")
    east.create_topics([NewTopic(topic, 3, 1)])
    remote = resume_repl.remote_topic("east", topic)
    with SteadyLoad(east.bootstrap, topic, "crash", 4000, rate=200) as load:
        copied = 0
        for kill in range(2):  # twice: the second kill hits a process that resumed from the first
            # killed only once this process moved records of its own (the last start's + 200)
            copied = wait_for(lambda floor=copied + 200: (n := len(values_in(west, remote))) >= floor and n, 300,
                              "records flowing")
            resume_repl.kill()  # SIGKILL: batches in flight, nothing flushed or committed
            assert not resume_repl.running
            time.sleep(2)
            resume_repl.start()
            if kill == 0:
                # the load (200/s for 20 s) runs on through the whole first restart, so over a thousand
                # records wait: they, not a warm-up batch, warm the new process up, so none of its tasks
                # compete with the query's (real time) or hold it back (micro-batch). By the second
                # restart the load may have ended, and a few waiting records warm nothing up.
                this_start = resume_repl.nodes[0].log_path.read_text().rsplit("===== mirrordrill: starting", 1)[1]
                assert "records wait past what it copied before: they warm Spark up" in this_start
                assert "Spark warmed up" not in this_start
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
