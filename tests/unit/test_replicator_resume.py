"""Resume positions and start-up figures of the bundled replicator (reading the target is integration-tested)."""

from __future__ import annotations

import json
import time

from mirrordrill.replicator.headers import PROVENANCE_HEADER, SOURCE_OFFSET_HEADER, encode_offset
from mirrordrill.replicator.resume import (
    EARLIEST,
    LATEST,
    FlowOrigin,
    StartPositions,
    records_waiting,
    settled,
    start_offsets,
    starting_offsets,
)
from mirrordrill.replicator.startup import StartupClock, process_started_at


def headers(src: int | None, prov: str | None = None) -> list[tuple[str, bytes]]:
    out = [("app", b"x")]
    if src is not None:
        out.append((SOURCE_OFFSET_HEADER, encode_offset(src)))
    if prov is not None:
        out.append((PROVENANCE_HEADER, prov.encode()))
    return out


def test_a_prefixed_remote_topic_is_the_flows_alone():
    origin = FlowOrigin("east", by_provenance=False)
    assert origin.owns(headers(41)) == 41
    assert origin.owns(headers(None)) is None  # written by something else: no source offset


def test_under_identity_only_records_whose_last_hop_is_the_source_are_the_flows():
    origin = FlowOrigin("east", by_provenance=True)
    assert origin.owns(headers(7, "east")) == 7
    assert origin.owns(headers(7, "north,east")) == 7  # came through north, copied here from east
    assert origin.owns(headers(7, "east,north")) is None  # another flow (north->here) wrote it
    assert origin.owns(headers(7)) is None
    assert origin.owns(headers(None, "east")) is None


def test_first_start_uses_the_configured_offsets_and_pins_latest(tmp_path):
    path = tmp_path / "start-positions.json"
    positions = StartPositions(path, "latest")
    got = positions.resolve({"a": 2}, lambda topic, n: [100, 200][:n])
    assert got == {"a": {"0": 100, "1": 200}}
    # a restart before anything was copied starts where the first start did, not at a new "latest"
    again = StartPositions(path, "latest").resolve({"a": 2}, lambda *_: [999, 999])
    assert again == {"a": {"0": 100, "1": 200}}


def test_topics_and_partitions_that_appear_later_start_at_the_earliest_offset(tmp_path):
    path = tmp_path / "start-positions.json"
    positions = StartPositions(path, "latest")
    positions.resolve({"a": 1}, lambda topic, n: [50] * n)
    got = positions.resolve({"a": 3, "b": 1}, lambda topic, n: [60] * n)
    assert got == {"a": {"0": 50, "1": EARLIEST, "2": EARLIEST}, "b": {"0": EARLIEST}}
    # and a new process knows them as well
    assert StartPositions(path, "latest").resolve({"a": 3, "b": 1}, lambda *_: [70] * 3) == got


def test_earliest_needs_no_source_lookup(tmp_path):
    def never(*_):
        raise AssertionError("no source lookup for earliest")
    got = StartPositions(tmp_path / "p.json", "earliest").resolve({"a": 2}, never)
    assert got == {"a": {"0": EARLIEST, "1": EARLIEST}}


def test_an_unreadable_positions_file_counts_every_topic_as_new(tmp_path):
    path = tmp_path / "p.json"
    path.write_text("{not json")
    assert StartPositions(path, "latest").resolve({"a": 1}, lambda *_: [5]) == {"a": {"0": EARLIEST}}


def test_starting_offsets_are_one_past_the_newest_copied_record():
    positions = {"a": {"0": EARLIEST, "1": 10}, "b": {"0": 3}}
    copied = {("a", 0): 41, ("a", 1): None, ("b", 0): 0}
    assert json.loads(starting_offsets(start_offsets(positions, copied))) == {"a": {"0": 42, "1": 10}, "b": {"0": 1}}


def test_records_waiting_count_partitions_with_nothing_copied_from_their_log_start():
    # a kill mid-batch: a[0] copied up to 359, a[1] and a[2] not started (EARLIEST)
    starts = start_offsets({"a": {"0": EARLIEST, "1": EARLIEST, "2": EARLIEST}},
                           {("a", 0): 359, ("a", 1): None, ("a", 2): None})
    assert starts == {("a", 0): 360, ("a", 1): EARLIEST, ("a", 2): EARLIEST}
    log_starts = {("a", 1): 50, ("a", 2): 0}  # retention dropped a[1]'s first 50 records
    ends = {("a", 0): 400, ("a", 1): 450, ("a", 2): 380}
    assert records_waiting(starts, log_starts, ends) == 40 + 400 + 380


def test_records_waiting_skip_partitions_starting_at_latest_and_never_go_negative():
    starts = {("a", 0): LATEST, ("a", 1): 500}
    assert records_waiting(starts, {}, {("a", 0): 900, ("a", 1): 480}) == 0


def test_startup_clock_counts_only_records_after_its_baseline():
    clock = StartupClock(started_at_ms=int(time.time() * 1000) - 3000)
    clock.observe_records(500)  # an earlier process of the same workdir wrote these
    clock.observe_records(500)
    assert clock.first_record_s is None
    clock.mark("spark_session")
    clock.mark("first_query")
    clock.observe_records(501)
    doc = clock.as_dict()
    assert doc["first_record_s"] >= 3.0 and doc["spark_session_s"] >= 3.0
    assert doc["first_record_s"] >= doc["first_query_s"]
    first = doc["first_record_s"]
    clock.observe_records(900)
    clock.mark("spark_session")  # only the first time counts
    assert clock.first_record_s == first and clock.spark_session_s == doc["spark_session_s"]


def test_process_start_is_when_the_process_was_spawned_to_the_clock_tick():
    """Start-up figures count from it: a start read a second early made every one a second slow."""
    import subprocess
    import sys
    before = time.time()
    child = subprocess.Popen([sys.executable, "-c", "from mirrordrill.replicator.startup import process_started_at as s; "
                              "import time; time.sleep(0.3); print(s())"], stdout=subprocess.PIPE, text=True)
    spawned = time.time()
    started = float(child.communicate(timeout=60)[0])
    assert before - 0.02 <= started <= spawned + 0.02  # a tick is 10 ms
    assert process_started_at() <= time.time()


def test_positions_are_read_until_two_readings_agree():
    readings = iter([{("a", 0): 5}, {("a", 0): 9}, {("a", 0): 12}, {("a", 0): 12}, {("a", 0): 99}])
    assert settled(lambda: next(readings), quiet_s=0) == {("a", 0): 12}


def test_settling_gives_up_after_its_limit_with_the_last_reading():
    count = iter(range(1000))
    got = settled(lambda: {("a", 0): next(count)}, quiet_s=0.01, limit_s=0.05)
    assert got[("a", 0)] >= 2
