"""Application consumers on real clusters: processing, commits, and restarts elsewhere."""

from __future__ import annotations

import time
from collections import Counter

import pytest
from confluent_kafka.admin import NewTopic

from mirrordrill.loadgen.app_consumer import AppConsumer, CommitPolicy, StartPosition, fetch_committed_offsets
from mirrordrill.loadgen.histories.kinds import PROCESSED_RECORDS
from mirrordrill.loadgen.histories.reader import read_rows
from tests.integration.kafka_helpers import produce_enveloped
from tests.integration.kafka_helpers import unique_topic as unique

pytestmark = pytest.mark.integration


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def rows_of(consumer: AppConsumer, cluster: str | None = None):
    consumer._writer.flush()
    return [r for r in read_rows(PROCESSED_RECORDS, consumer.path)
            if cluster is None or r.cluster == cluster]


def wait_assigned(consumer: AppConsumer, partitions: int, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while len(consumer.current_run.start_offsets) < partitions:
        assert time.monotonic() < deadline, "partitions were never assigned"
        assert consumer.error is None, consumer.error
        time.sleep(0.05)


def test_processes_commits_and_restarts_on_another_cluster_from_explicit_offsets(wan_env, tmp_path):
    east, west = wan_env.cluster("east"), wan_env.cluster("west")
    t, group = unique("app"), unique("group")
    for c in (east, west):
        c.create_topics([NewTopic(t, 2, 1)])
    produce_enveloped(east.bootstrap, t, "app-p", 300, partitions=2)
    # the DR copy: the same records at the same positions (what a perfect replicator gives)
    produce_enveloped(west.bootstrap, t, "app-p", 300, partitions=2)

    app = AppConsumer(group, tmp_path / "hist", CommitPolicy(mode="manual", every_records=50))
    try:
        run = app.start("east", east.bootstrap, [t], StartPosition.committed())
        assert app.wait_processed(300, timeout_s=30), app.error
        app.stop()
        assert app.error is None
        assert run.first_record_ts_ms is not None and run.first_record_ts_ms >= run.started_ts_ms
        assert run.stopped_ts_ms >= run.first_record_ts_ms
        assert app.committed_offsets() == {(t, 0): 150, (t, 1): 150}
        assert fetch_committed_offsets(east.bootstrap, group) == {(t, 0): 150, (t, 1): 150}
        east_rows = rows_of(app, "east")
        assert len(east_rows) == 300 and len({(r.partition, r.offset) for r in east_rows}) == 300
        assert {r.seq for r in east_rows} == set(range(300))
        assert all(r.group == group and r.producer_id == "app-p" for r in east_rows)

        # failover: west from translated offsets (here: partition 0 at 100, partition 1 at 140)
        run2 = app.restart("west", west.bootstrap, [t],
                           StartPosition.at_offsets({(t, 0): 100, (t, 1): 140}))
        assert app.wait_processed(60, timeout_s=30), app.error
        time.sleep(0.5)  # nothing more may come
        app.stop()
        assert run2.start_offsets == {(t, 0): 100, (t, 1): 140}
        west_rows = rows_of(app, "west")
        assert sorted((r.partition, r.offset) for r in west_rows) == \
            [(0, o) for o in range(100, 150)] + [(1, o) for o in range(140, 150)]
        assert run2.records == 60 and run2.first_record_ts_ms >= run2.started_ts_ms
        assert app.committed_offsets() == {(t, 0): 150, (t, 1): 150}
        assert fetch_committed_offsets(west.bootstrap, group) == {(t, 0): 150, (t, 1): 150}
        assert len(app.runs) == 2
    finally:
        app.close()


def test_restart_from_a_timestamp_and_from_committed_offsets_with_auto_commit(wan_env, tmp_path):
    east = wan_env.cluster("east")
    t, group = unique("app-ts"), unique("group")
    east.create_topics([NewTopic(t, 1, 1)])
    produce_enveloped(east.bootstrap, t, "ts-p", 100)
    time.sleep(0.2)
    cut = now_ms()
    time.sleep(0.2)
    produce_enveloped(east.bootstrap, t, "ts-p", 40, first_seq=100)

    app = AppConsumer(group, tmp_path / "hist", CommitPolicy(mode="auto", interval_ms=200))
    try:
        run = app.start("east", east.bootstrap, [t], StartPosition.at_timestamp(cut))
        assert app.wait_processed(40, timeout_s=30), app.error
        time.sleep(0.5)
        app.stop()
        assert run.start_offsets == {(t, 0): 100}
        assert sorted(r.seq for r in rows_of(app)) == list(range(100, 140))
        # leaving commits what auto-commit had stored: only processed records
        assert fetch_committed_offsets(east.bootstrap, group) == {(t, 0): 140}
        assert app.committed_offsets() == {(t, 0): 140}

        # committed: picks up exactly after what was processed
        produce_enveloped(east.bootstrap, t, "ts-p", 25, first_seq=140)
        run2 = app.restart("east", east.bootstrap, [t], StartPosition.committed())
        assert app.wait_processed(25, timeout_s=30), app.error
        time.sleep(0.5)
        app.stop()
        assert run2.start_offsets == {(t, 0): 140} and run2.records == 25
        counts = Counter((r.partition, r.offset) for r in rows_of(app))
        assert max(counts.values()) == 1  # nothing processed twice
    finally:
        app.close()


def test_latest_skips_the_backlog_and_earliest_rereads_it(wan_env, tmp_path):
    east = wan_env.cluster("east")
    t, group = unique("app-latest"), unique("group")
    east.create_topics([NewTopic(t, 1, 1)])
    produce_enveloped(east.bootstrap, t, "lt-p", 30)
    app = AppConsumer(group, tmp_path / "hist", CommitPolicy(mode="manual", interval_ms=100))
    try:
        run = app.start("east", east.bootstrap, [t], StartPosition.latest())
        wait_assigned(app, 1)
        assert run.start_offsets == {(t, 0): 30}  # resolved at assignment, not later
        produce_enveloped(east.bootstrap, t, "lt-p", 10, first_seq=30)
        assert app.wait_processed(10, timeout_s=30), app.error
        time.sleep(0.3)
        app.stop()
        assert sorted(r.seq for r in rows_of(app)) == list(range(30, 40))

        run = app.restart("east", east.bootstrap, [t], StartPosition.earliest())
        assert app.wait_processed(40, timeout_s=30), app.error
        app.stop()
        assert run.start_offsets == {(t, 0): 0} and run.records == 40  # the whole topic again: reprocessing made visible
    finally:
        app.close()


def test_a_regex_subscription_finds_the_topics(wan_env, tmp_path):
    east = wan_env.cluster("east")
    prefix, group = unique("app-re"), unique("group")
    east.create_topics([NewTopic(f"{prefix}.a", 1, 1), NewTopic(f"{prefix}.b", 1, 1)])
    produce_enveloped(east.bootstrap, f"{prefix}.a", "re-p", 5)
    produce_enveloped(east.bootstrap, f"{prefix}.b", "re-q", 7)
    app = AppConsumer(group, tmp_path / "hist")
    try:
        app.start("east", east.bootstrap, f"^{prefix}\\..*", StartPosition.earliest())
        assert app.wait_processed(12, timeout_s=30), app.error
        app.stop()
        assert Counter(r.topic for r in rows_of(app)) == {f"{prefix}.a": 5, f"{prefix}.b": 7}
    finally:
        app.close()
