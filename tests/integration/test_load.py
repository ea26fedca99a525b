"""The load process, the observer and the lag sampler against a real cluster.

The ground truth is always the topic itself, read back with a plain consumer: the ledger
must match it exactly after a clean stop, and never claim more than it holds after a crash.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections import defaultdict
from itertools import pairwise
from pathlib import Path

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import NewPartitions, NewTopic

from mirrordrill.loadgen import envelope
from mirrordrill.loadgen.histories.kinds import ACKED_SENDS, END_OFFSETS, TARGET_RECORDS, UNCERTAIN_SENDS
from mirrordrill.loadgen.histories.reader import read_rows
from mirrordrill.loadgen.lag_sampler import LagSampler
from mirrordrill.loadgen.observer import Observer
from mirrordrill.loadgen.runner import LoadRunner
from mirrordrill.loadgen.spec import LoadSpec
from mirrordrill.primitives.import_root import IMPORT_ROOT
from mirrordrill.primitives.kafka.reading import watermarks
from mirrordrill.primitives.process import ProcessError
from tests.integration.kafka_helpers import produce_enveloped
from tests.integration.kafka_helpers import unique_topic as unique

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]

Position = tuple[str, int, int]


# --------------------------------------------------------------------------- helpers


def end_offsets(c: Consumer, topics: dict[str, int], timeout_s: float = 30.0
                ) -> dict[tuple[str, int], int]:
    """High watermarks; waits while a just-created topic is not yet in the metadata."""
    return {(t, p): high for t, n in topics.items()
            for p, (_, high) in watermarks(c, t, range(n), timeout_s).items()}


def topic_end(cluster, topic: str) -> int:
    """How many records a one-partition topic holds."""
    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": unique("ends"), "log_level": 3})
    try:
        return end_offsets(c, {topic: 1})[(topic, 0)]
    finally:
        c.close()


def read_positions(bootstrap: str, topics: dict[str, int], timeout_s: float = 30.0
                   ) -> dict[Position, tuple[str, int, bool, int]]:
    """Every record of ``topics`` ({name: partitions}) up to the current end offsets:
    position -> (producer_id, seq, checksum_ok, size); no envelope -> ("", -1, False, size)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": unique("readback"),
                  "enable.auto.commit": False, "log_level": 3})
    try:
        ends = end_offsets(c, topics, timeout_s)
        c.assign([TopicPartition(t, p, OFFSET_BEGINNING) for t, p in ends])
        nxt = {tp: 0 for tp in ends}
        out: dict[Position, tuple[str, int, bool, int]] = {}
        deadline = time.monotonic() + timeout_s
        while any(nxt[tp] < ends[tp] for tp in ends):
            assert time.monotonic() < deadline, f"read back stalled at {nxt} of {ends}"
            for m in c.consume(1000, timeout=0.5):
                if m.error():
                    continue
                env, ok = envelope.decode_verified(m.value())
                key = (m.topic(), m.partition(), m.offset())
                out[key] = ((env.producer_id, env.seq, ok, len(m.value())) if env
                            else ("", -1, False, len(m.value() or b"")))
                nxt[(m.topic(), m.partition())] = m.offset() + 1
        return out
    finally:
        c.close()


def assert_ledger_matches_topic(runner: LoadRunner, bootstrap: str, topics: dict[str, int],
                                exact: bool) -> tuple[int, int]:
    """Every ledger row is in the topic at its position; with ``exact``, the topic holds
    nothing else than ledger and uncertain ids. Returns (acked, uncertain) counts."""
    acked = read_rows(ACKED_SENDS, runner.ledger_paths)
    uncertain = read_rows(UNCERTAIN_SENDS, runner.uncertain_paths)
    topic = read_positions(bootstrap, topics)
    assert acked, "the ledger is empty"
    for a in acked:
        pos = (a.topic, a.partition, a.offset)
        assert pos in topic, f"ledger row {a} is not in the topic"
        pid, seq, ok, size = topic[pos]
        assert (pid, seq) == (a.producer_id, a.seq), f"{pos} holds {pid}/{seq}, ledger says {a}"
        assert ok and size == a.size_bytes
        assert a.ack_ts_ms >= a.send_ts_ms
    ledger_ids = {(a.producer_id, a.seq) for a in acked}
    assert len(ledger_ids) == len(acked), "an id acknowledged twice"
    if exact:
        uncertain_ids = {(u.producer_id, u.seq) for u in uncertain}
        topic_ids = [(pid, seq) for pid, seq, _, _ in topic.values()]
        assert len(set(topic_ids)) == len(topic_ids), "idempotent producer wrote a duplicate"
        assert set(topic_ids) - ledger_ids <= uncertain_ids
        # every seq a producer used is accounted for exactly once
        by_producer: dict[str, list[int]] = defaultdict(list)
        for pid, seq in ledger_ids | uncertain_ids:
            by_producer[pid].append(seq)
        for pid, seqs in by_producer.items():
            assert sorted(seqs) == list(range(len(seqs))), f"{pid}: seqs are not 0..n-1"
        assert not ledger_ids & uncertain_ids
    return len(acked), len(uncertain)


@pytest.fixture
def east(wan_env):
    return wan_env.cluster("east")


def load_spec(bootstrap: str, topics, **kw) -> LoadSpec:
    return LoadSpec.model_validate({"cluster": "east", "bootstrap_servers": bootstrap,
                                    "topics": topics, "output_dir": "histories", **kw})


# --------------------------------------------------------------------------- load


def test_load_at_a_set_rate_and_the_ledger_matches_the_topic(east, tmp_path):
    a, b = unique("load-a"), unique("load-b")
    east.create_topics([NewTopic(a, 3, 1), NewTopic(b, 1, 1)])
    spec = load_spec(east.bootstrap, [a, b], rate=500, duration_s=8, users=2,
                     record_size={"uniform": [200, 2000]}, keys={"uniform": 50})
    runner = LoadRunner(spec, tmp_path / "load")
    try:
        runner.start()
        assert runner.wait(60) == 0, runner.log_path.read_text()[-3000:]
    finally:
        runner.stop()
    stats = runner.stats()
    assert stats.final and stats.state == "stopped" and "duration" in stats.stop_reason
    assert 375 <= stats.achieved_rate <= 625, stats
    assert stats.failed == stats.rejected == 0
    assert stats.sent == stats.acked + stats.pending_at_shutdown
    assert stats.locust_requests == stats.acked and stats.ack_latency_ms.p50 > 0
    assert set(stats.topics) == {a, b} and len(stats.producer_ids) == 2
    acked, _ = assert_ledger_matches_topic(runner, east.bootstrap, {a: 3, b: 1}, exact=True)
    assert acked == stats.acked
    sizes = [r.size_bytes for r in read_rows(ACKED_SENDS, runner.ledger_path)]
    assert min(sizes) >= 200 and max(sizes) <= 2000


def test_payload_models_fill_the_body_and_the_ledger_still_matches(east, tmp_path):
    t = unique("load-payload")
    east.create_topics([NewTopic(t, 2, 1)])
    fields = {"user": {"ids": 40}, "status": {"enum": ["new", "paid"]}, "note": {"words": 3}}
    spec = load_spec(east.bootstrap, [t], rate=300, duration_s=3, payload={"json": {"fields": fields}})
    runner = LoadRunner(spec, tmp_path / "load")
    try:
        runner.start()
        assert runner.wait(60) == 0, runner.log_path.read_text()[-3000:]
    finally:
        runner.stop()
    acked, _ = assert_ledger_matches_topic(runner, east.bootstrap, {t: 2}, exact=True)
    assert acked == runner.stats().acked > 0
    c = Consumer({"bootstrap.servers": east.bootstrap, "group.id": unique("payload"), "log_level": 3})
    try:
        c.assign([TopicPartition(t, p, OFFSET_BEGINNING) for p in range(2)])
        values = [m.value() for m in c.consume(50, timeout=10) if m.error() is None]
    finally:
        c.close()
    assert values
    for value in values:
        env = envelope.decode(value)
        body = json.loads(value[len(value) - env.payload_size:])
        assert list(body) == list(fields) and 0 <= body["user"] < 40 and body["status"] in ("new", "paid")


def test_sigterm_mid_run_stops_cleanly_and_the_ledger_still_matches(east, tmp_path):
    t = unique("load-term")
    east.create_topics([NewTopic(t, 2, 1)])
    runner = LoadRunner(load_spec(east.bootstrap, [t], rate=400), tmp_path / "load")
    try:
        runner.start()
        time.sleep(3)
        assert runner.running
        stats = runner.stop()
    finally:
        runner.kill()
    assert runner.returncode == 0, runner.log_path.read_text()[-3000:]
    assert stats.final and stats.state == "stopped" and stats.stop_reason == "SIGTERM"
    assert stats.acked > 0
    acked, uncertain = assert_ledger_matches_topic(runner, east.bootstrap, {t: 2}, exact=True)
    assert (acked, uncertain) == (stats.acked, stats.failed + stats.pending_at_shutdown)


@pytest.mark.parametrize("connect_ahead", [True, False])
def test_a_held_load_produces_only_once_its_start_signal_exists(east, tmp_path, connect_ahead):
    t = unique("load-held")
    east.create_topics([NewTopic(t, 1, 1)])
    signal_file = tmp_path / "start"
    runner = LoadRunner(load_spec(east.bootstrap, [t], rate=200, duration_s=2, users=2, start_signal=signal_file,
                                  connect_ahead=connect_ahead), tmp_path / "load")
    try:
        runner.start(wait=False)
        runner.wait_held()
        time.sleep(1)  # held a while longer: still nothing sent
        assert runner.running
        held = runner.stats()
        assert held is not None and held.state == "held" and held.sent == 0
        # both producers connected while held, so the first records do not wait for it; unless told
        # not to (a planned move's standby producers: their stable address resolves elsewhere until then)
        assert held.connected_ahead == (2 if connect_ahead else 0)
        assert topic_end(east, t) == 0
        signal_file.touch()
        runner.wait_running()
        assert runner.wait(60) == 0, runner.log_path.read_text()[-3000:]
    finally:
        runner.stop()
    stats = runner.stats()
    assert stats.state == "stopped" and "duration" in stats.stop_reason and stats.acked > 0
    acked, _ = assert_ledger_matches_topic(runner, east.bootstrap, {t: 1}, exact=True)
    assert acked == stats.acked == topic_end(east, t)


def test_a_held_load_whose_cluster_does_not_answer_is_held_anyway_and_stops_cleanly(tmp_path):
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        silent = f"127.0.0.1:{s.getsockname()[1]}"
    runner = LoadRunner(load_spec(silent, [unique("load-nobody")], rate=200, start_signal=tmp_path / "never"),
                        tmp_path / "load")
    try:
        runner.start(wait=False)
        runner.wait_held()  # after the metadata wait gave up, not never
        held = runner.stats()
        assert held.state == "held" and held.connected_ahead == 0
        stats = runner.stop(timeout_s=10)
    finally:
        runner.kill()
    assert runner.returncode == 0, runner.log_path.read_text()[-3000:]
    assert stats.final and stats.state == "stopped" and stats.sent == 0
    assert "no metadata of" in runner.log_path.read_text()


def test_sigterm_while_held_stops_at_once_having_sent_nothing(east, tmp_path):
    t = unique("load-held-term")
    east.create_topics([NewTopic(t, 1, 1)])
    runner = LoadRunner(load_spec(east.bootstrap, [t], rate=200, start_signal=tmp_path / "never"),
                        tmp_path / "load")
    try:
        runner.start(wait=False)
        runner.wait_held()
        stats = runner.stop(timeout_s=10)
    finally:
        runner.kill()
    assert runner.returncode == 0, runner.log_path.read_text()[-3000:]
    assert stats.final and stats.state == "stopped" and stats.stop_reason == "SIGTERM"
    assert stats.sent == stats.acked == 0 and topic_end(east, t) == 0


def stop_while_cut_off(wan_env, wan_link, tmp_path, how: str, flush_timeout_s: float):
    """A load from the east data center into west, through the WAN link, stopped ``how`` ("stop" or
    "abandon") once the link is cut. Returns (runner, west, topic, stats, seconds the stop took);
    the link is healed again when it returns."""
    west = wan_env.cluster("west")
    t = unique("load-hole")
    west.create_topics([NewTopic(t, 1, 1)])
    spec = load_spec(west.wan_bootstrap("east"), [t], rate=300, flush_timeout_s=flush_timeout_s)
    runner = LoadRunner(spec.model_copy(update={"cluster": "west"}), tmp_path / "load")
    try:
        runner.start()
        time.sleep(2)
        wan_link.blackhole()
        time.sleep(1.5)
        started = time.monotonic()
        stats = runner.stop() if how == "stop" else runner.abandon(30)
        took = time.monotonic() - started
        assert not runner.running
    finally:
        runner.kill()
        wan_link.heal()
    assert runner.returncode == 0, runner.log_path.read_text()[-3000:]
    assert stats.final and stats.pending_at_shutdown > 0 and stats.acked > 0
    return runner, west, t, stats, took


def test_sigterm_while_the_cluster_is_unreachable_records_pending_sends_as_uncertain(
        wan_env, wan_link, tmp_path):
    runner, west, t, stats, took = stop_while_cut_off(wan_env, wan_link, tmp_path, "stop", flush_timeout_s=2)
    assert took < 15
    acked, uncertain = assert_ledger_matches_topic(runner, west.bootstrap, {t: 1}, exact=True)
    assert (acked, uncertain) == (stats.acked, stats.failed + stats.pending_at_shutdown)
    reasons = {u.error.split(" (")[0] for u in read_rows(UNCERTAIN_SENDS, runner.uncertain_path)}
    assert reasons == {"no ack before shutdown"}


def test_an_abandoned_load_stops_without_waiting_for_acks_and_sends_nothing_after(wan_env, wan_link, tmp_path):
    """What an unplanned failover does to the lost site's producers before the stable address moves."""
    # a flush timeout far longer than the stop may take: SIGTERM would wait all of it
    runner, west, t, stats, took = stop_while_cut_off(wan_env, wan_link, tmp_path, "abandon", flush_timeout_s=60)
    assert took < 15, f"abandon waited {took:.1f}s: it drained as on SIGTERM (flush timeout 60 s)"
    assert stats.stop_reason.startswith("SIGUSR1")
    # the link is back: nothing of the abandoned process reaches the topic any more
    time.sleep(2)
    acked, uncertain = assert_ledger_matches_topic(runner, west.bootstrap, {t: 1}, exact=True)
    assert (acked, uncertain) == (stats.acked, stats.failed + stats.pending_at_shutdown)


def test_sigkill_mid_run_leaves_no_fabricated_ledger_entry(east, tmp_path):
    t = unique("load-kill")
    east.create_topics([NewTopic(t, 2, 1)])
    runner = LoadRunner(load_spec(east.bootstrap, [t], rate=400), tmp_path / "load")
    try:
        runner.start()
        time.sleep(3)
        runner.kill()
    finally:
        runner.stop()
    assert runner.returncode == -signal.SIGKILL
    assert not runner.stats().final
    assert_ledger_matches_topic(runner, east.bootstrap, {t: 2}, exact=False)


def test_settings_librdkafka_refuses_fail_the_start_with_the_reason(tmp_path):
    spec = load_spec("127.0.0.1:9", ["t"], rate=10, producer={"no.such.setting": 1})
    runner = LoadRunner(spec, tmp_path / "load")
    with pytest.raises(ProcessError, match="No such configuration property"):
        runner.start()
    runner.stop()
    assert runner.returncode == 1
    stats = runner.stats()
    assert stats.state == "failed" and "no.such.setting" in stats.error


def test_locust_command_line_with_its_own_options(east, tmp_path):
    t = unique("load-cli")
    locust = Path(sys.executable).with_name("locust")
    # -t counts from Locust's start, the users' producers connecting included: 8 s, so a machine whose
    # other tests fill its cores (where 4 s left about one second of load) still runs the load for seconds
    cmd = [str(locust), "-f", str(REPO / "loadgen" / "producer_user.py"), "--headless",
           "-u", "2", "-r", "2", "-t", "8s", "--only-summary",
           "--kafka-bootstrap", east.bootstrap, "--kafka-cluster", "east", "--topics", t,
           "--create-topics", "2", "--rate", "200", "--record-size", '{"normal": [500, 50]}',
           "--keys", "hot:20:2:0.9", "--ledger-dir", "ledger"]
    proc = subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, env={**os.environ, "PYTHONPATH": str(IMPORT_ROOT)})
    try:
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, out[-3000:]
    [stats_file] = (tmp_path / "ledger").glob("load-stats.*.json")
    stats = json.loads(stats_file.read_text())
    assert stats["final"] and stats["acked"] > 300 and stats["failed"] == 0

    class Paths:  # the two history files of that one instance
        ledger_paths = list((tmp_path / "ledger").glob("acked.*.csv"))
        uncertain_paths = list((tmp_path / "ledger").glob("uncertain.*.csv"))
    assert len(Paths.ledger_paths) == 1
    acked, _ = assert_ledger_matches_topic(Paths, east.bootstrap, {t: 2}, exact=True)
    assert acked == stats["acked"]


# --------------------------------------------------------------------------- observer


def test_observer_sees_every_record_including_topics_and_partitions_created_later(east, tmp_path):
    prefix = unique("obs")
    first, later = f"{prefix}-first", f"{prefix}-later"
    east.create_topics([NewTopic(first, 2, 1)])
    produce_enveloped(east.bootstrap, first, "obs-p1", 200, partitions=2)
    observer = Observer("east", east.bootstrap, f"^{prefix}-.*", tmp_path / "hist",
                        discovery_interval_s=0.5)
    try:
        observer.start()
        east.create_topics([NewTopic(later, 1, 1)])
        produce_enveloped(east.bootstrap, later, "obs-p2", 100)
        admin = east.admin()
        admin.create_partitions([NewPartitions(first, 3)])[first].result(30)
        produce_enveloped(east.bootstrap, first, "obs-p1", 90, first_seq=200, partitions=3)
        # garbage and a corrupted copy must be visible, not skipped
        bad = bytearray(envelope.encode("obs-p3", 0, int(time.time() * 1000), 300))
        bad[-1] ^= 0xFF
        p = Producer({"bootstrap.servers": east.bootstrap, "log_level": 3})
        p.produce(later, b"not an envelope")
        p.produce(later, bytes(bad))
        assert p.flush(30) == 0
        assert observer.drain(timeout_s=30)
    finally:
        observer.stop(drain=False)
    assert observer.error is None
    truth = read_positions(east.bootstrap, {first: 3, later: 1})
    assert len(truth) == 200 + 100 + 90 + 2
    rows = read_rows(TARGET_RECORDS, observer.path)
    seen: dict[Position, tuple[str, int, bool]] = {}
    for r in rows:
        pos = (r.topic, r.partition, r.offset)
        assert seen.setdefault(pos, (r.producer_id, r.seq, r.checksum_ok)) == \
            (r.producer_id, r.seq, r.checksum_ok), f"{pos} read as two different records"
        assert r.cluster == "east"
    assert {pos: v[:3] for pos, v in truth.items()} == seen
    assert seen[(later, 0, 100)] == ("", -1, False)
    assert seen[(later, 0, 101)] == ("obs-p3", 0, False)
    assert observer.undecodable == 1 and observer.bad_checksums == 1
    assert (first, 2) in observer.assigned
    sends = {r.seen_ts_ms for r in rows if r.producer_id == "obs-p2"}
    assert min(sends) >= observer.started_ts_ms


def test_stop_drains_records_produced_just_before(east, tmp_path):
    t = unique("obs-drain")
    east.create_topics([NewTopic(t, 1, 1)])
    observer = Observer("east", east.bootstrap, [t], tmp_path / "hist").start()
    try:
        produce_enveloped(east.bootstrap, t, "drain-p", 500)
    finally:
        drained = observer.stop(drain=True, timeout_s=30)
    assert drained
    assert len({(r.partition, r.offset) for r in read_rows(TARGET_RECORDS, observer.path)}) == 500


# --------------------------------------------------------------------------- lag sampler


def test_lag_sampler_records_end_offsets_every_interval(east, tmp_path):
    t = unique("lag")
    east.create_topics([NewTopic(t, 2, 1)])
    read_positions(east.bootstrap, {t: 2})  # leaders known: the topic is fully created
    sampler = LagSampler("east", east.bootstrap, [t], tmp_path / "hist", interval_s=0.5).start()
    try:
        time.sleep(1.2)
        produce_enveloped(east.bootstrap, t, "lag-p", 40, partitions=2)
        time.sleep(1.3)
    finally:
        sampler.stop()
    rows = read_rows(END_OFFSETS, sampler.path)
    assert sampler.samples >= 4
    assert {(r.cluster, r.topic) for r in rows} == {("east", t)}
    series: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for r in rows:
        series[r.partition].append((r.ts_ms, r.end_offset))
    assert set(series) == {0, 1}
    for points in series.values():
        ends = [end for _, end in sorted(points)]
        assert len(ends) >= 3, points
        assert ends[0] == 0 and ends[-1] == 20 and ends == sorted(ends), points
    timestamps = sorted({r.ts_ms for r in rows})
    assert all(b - a >= 300 for a, b in pairwise(timestamps)), timestamps
