"""``bench drills``'s pure part: one run's figures from its summary, medians, the markdown table."""

from __future__ import annotations

from pathlib import Path

import pytest

from mirrordrill.harness.tools.bench.drills import BenchCell, BenchError, BenchResult, bench, figure_columns, figures
from tests.unit.test_calibrate import _summary


def _with_starts(summary, starts):
    return summary.model_copy(update={"replicator_starts": starts})


def test_figures_sum_counts_and_take_the_worst_flow_and_group():
    s = _summary(p99=900, duplicates=3, throughput=100.0, flows=("a->b", "b->a"),
                 failovers=(("g1", 10, 2.5), ("g2", 5, 4.0)))
    got = figures(s)
    assert got["duplicates"] == 6 and got["latency_p99_ms"] == 900 and got["throughput_records_s"] == 200.0
    assert got["reprocessed"] == 15 and got["rto_s"] == 4.0
    assert got["first_start_s"] is None and got["restart_s"] is None  # MM2 reports no start-up


def test_start_up_tells_first_starts_from_restarts_after_a_kill():
    s = _with_starts(_summary(), [
        {"process": "west", "started_at_ms": 1_000, "first_record_s": 19.0},
        {"process": "east", "started_at_ms": 3_000, "first_record_s": 21.0},  # the other location's first start
        {"process": "west", "started_at_ms": 90_000, "first_record_s": 14.0},  # restarted after the kill
    ])
    got = figures(s)
    assert got["first_start_s"] == 21.0 and got["restart_s"] == 14.0
    # a fast replicator restarts within a minute of its first start: still a restart (2026-11-25:
    # the crash drill's restart 40 s after the first start was counted as a first start)
    quick = _with_starts(_summary(), [{"process": "west", "started_at_ms": 1_000, "first_record_s": 19.5},
                                      {"process": "west", "started_at_ms": 40_000, "first_record_s": 10.4}])
    assert figures(quick)["first_start_s"] == 19.5 and figures(quick)["restart_s"] == 10.4


def test_a_later_start_at_the_same_location_is_a_restart_only_if_the_replicator_says_so():
    # a failback: the forward replicator @dr, the copy back @primary, then the re-protect @dr (a new replicator)
    s = _with_starts(_summary(), [
        {"process": "@dr", "started_at_ms": 1_000, "first_record_s": 23.0, "restart": False},
        {"process": "@primary", "started_at_ms": 90_000, "first_record_s": 10.8, "restart": False},
        {"process": "@dr", "started_at_ms": 110_000, "first_record_s": 11.4, "restart": False},
    ])
    assert figures(s)["first_start_s"] == 23.0 and figures(s)["restart_s"] is None


def test_start_log_tells_a_restart_of_a_process_from_its_first_start():
    from mirrordrill.harness.drill.replicators.start_log import StartLog
    log = StartLog()
    log.record("@west", {"started_at_ms": 1_000, "first_record_s": 19.0})
    log.record("@east", {"started_at_ms": 1_500, "first_record_s": 18.0})
    log.record("@west", {"started_at_ms": 1_000, "first_record_s": 19.0})  # polled again: the same start
    log.record("@west", {"started_at_ms": 60_000, "first_record_s": 12.0})  # after the kill
    assert [(e["process"], e["restart"]) for e in log.entries()] == [
        ("@west", False), ("@east", False), ("@west", True)]


def test_a_group_that_moves_twice_counts_its_reprocessing_once():
    # the checker counts the group's whole history in each move: failover then switch back
    s = _summary(failovers=(("billing", 440, 1.0), ("billing", 440, 2.5), ("audit", 7, 0.5)))
    got = figures(s)
    assert got["reprocessed"] == 447 and got["rto_s"] == 2.5


def test_a_drill_without_failover_has_no_rto_or_reprocessed():
    got = figures(_summary())
    assert got["rto_s"] is None and got["reprocessed"] is None


def test_medians_skip_missing_figures_and_the_table_pairs_the_replicators(tmp_path):
    ours = BenchCell("crash", "pyspark", runs=[
        {"passed": True, **{k: None for k in figure_columns()}, "duplicates": d, "latency_p99_ms": p}
        for d, p in ((0, 300), (0, 500), (2, 400))])
    theirs = BenchCell("crash", "mirrormaker2", runs=[{"passed": False, **{k: None for k in figure_columns()}, "duplicates": 248}])
    assert ours.medians["duplicates"] == 0 and ours.medians["latency_p99_ms"] == 400
    assert ours.medians["rto_s"] is None and ours.passed == "3/3" and theirs.passed == "0/1"
    result = BenchResult(tmp_path, 3, [ours, theirs], "2026-11-23 19:00 UTC", "12.0 9.0 8.0", "2 cores")
    md = result.markdown().splitlines()
    rows = [line for line in md if line.startswith("| crash")]
    assert rows == ["| crash | pyspark | 3/3 | 0 | - | 400 | - | - | - | - | - | - |",
                    "| crash | mirrormaker2 | 0/1 | 248 | - | - | - | - | - | - | - | - |"]
    js, table = result.save()
    assert js.exists() and table.read_text().startswith("Medians of 3 interleaved run(s)")


def test_bad_arguments_name_the_fix(tmp_path):
    with pytest.raises(BenchError, match="at least once"):
        bench([Path("scenarios/quickstart.yaml")], 0, tmp_path)
    with pytest.raises(BenchError, match="no drill file at .*nope.yaml"):
        bench([tmp_path / "nope.yaml"], 3, tmp_path)


def test_a_drill_with_an_unplanned_failover_is_spread_over_its_checkpoint_interval():
    import yaml

    from mirrordrill.harness.tools.bench.drills import checkpoint_phases
    drill = yaml.safe_load(Path("scenarios/secure-failover.yaml").read_text())
    # the drills' checkpoint interval is 5 s for both replicators: three runs 0, 1.667 and 3.333 s later
    assert checkpoint_phases(drill, 3) == (0.0, 1.667, 3.333)
    drill["replication"]["flows"][0]["settings"] = {"emit.checkpoints.interval.seconds": 8}
    assert checkpoint_phases(drill, 4) == (0.0, 2.0, 4.0, 6.0)
    # no unplanned failover (a planned one waits for a checkpoint carrying the commit): repeated as written
    planned = yaml.safe_load(Path("scenarios/active-passive-planned-failover.yaml").read_text())
    assert checkpoint_phases(planned, 3) is None
    assert checkpoint_phases(yaml.safe_load(Path("scenarios/quickstart.yaml").read_text()), 3) is None


def test_the_incident_and_everything_after_it_move_later_and_nothing_before_it():
    import pytest

    from mirrordrill.harness.tools.sweep.params import SweepError, apply_params
    drill = {"duration": "75s", "replication": {"flows": []},
             "timeline": [{"at": "5s", "do": "blackhole"},
                          {"at": "20s", "when": {"lag_at_most": 300, "timeout": "30s"}, "do": "unplanned_failover"},
                          {"do": "wait_drain"},
                          {"at": "40s", "do": "failback"}]}
    out = apply_params(drill, {"failover_shift_s": 1.667})
    assert [s.get("at") for s in out["timeline"]] == ["5s", 21.667, None, 41.667]
    assert out["duration"] == 76.667 and out["timeline"][1]["when"]["timeout"] == "30s"
    assert drill["timeline"][1]["at"] == "20s"  # the original is untouched
    with pytest.raises(SweepError, match="no unplanned_failover"):
        apply_params({"timeline": [{"at": 3, "do": "blackhole"}]}, {"failover_shift_s": 1})
    with pytest.raises(SweepError, match="0 or more"):
        apply_params(drill, {"failover_shift_s": -1})


def test_reprocessing_over_the_checkpoint_cycle_is_the_mean_of_its_phases(tmp_path):
    runs = [{"passed": True, **{k: None for k in figure_columns()}, "reprocessed": r, "latency_p99_ms": p,
             "failover_shift_s": shift} for r, p, shift in ((80, 200, 0.0), (467, 300, 1.667), (339, 250, 3.333))]
    spread = BenchCell("secure-failover", "pyspark", runs=runs, phase_spread=True)
    fixed = BenchCell("secure-failover", "pyspark", runs=runs)
    assert spread.medians["reprocessed"] == 295.3333333333333 and fixed.medians["reprocessed"] == 339
    assert spread.medians["latency_p99_ms"] == 250  # every other figure is still the median
    md = BenchResult(tmp_path, 3, [spread], "2026-11-28 02:00 UTC", "1.0 1.0 1.0", "2 cores").markdown()
    assert "| secure-failover | pyspark | 3/3 | - | - | 250 | - | - | 295* |" in md
    assert "the replay over the whole checkpoint cycle" in md


def test_a_bench_sweeps_the_failover_phase_with_both_replicators_at_each(tmp_path):
    from mirrordrill.harness.tools.bench.drills import _sweeps
    ((sweep, label),) = _sweeps(Path("scenarios/active-passive-unplanned-failover.yaml"), 3, tmp_path,
                                log=lambda m: None, reports=None)
    assert sweep.repeat == 1 and label is None
    assert sweep.combinations()[:3] == [{"failover_shift_s": 0.0, "replicator": "pyspark"},
                                        {"failover_shift_s": 0.0, "replicator": "mirrormaker2"},
                                        {"failover_shift_s": 1.667, "replicator": "pyspark"}]
    assert len(sweep.combinations()) == 6
    ((plain, _),) = _sweeps(Path("scenarios/quickstart.yaml"), 3, tmp_path, log=lambda m: None, reports=None)
    assert plain.repeat == 3 and plain.combinations() == [{"replicator": "pyspark"}, {"replicator": "mirrormaker2"}]


def test_a_drill_that_tunes_connects_worker_also_runs_mm2_once_with_connects_defaults(tmp_path):
    from mirrordrill.harness.tools.bench.drills import CONNECT_DEFAULTS_LABEL, _sweeps
    (tuned, _), (untuned, label), *_ = _sweeps(Path("scenarios/replicator-node-loss.yaml"), 3, tmp_path,
                                               log=lambda m: None, reports=None)
    assert tuned.repeat == 3 and untuned.repeat == 1 and label == CONNECT_DEFAULTS_LABEL
    # the file tunes all three; the drain waits out the 300 s delay and the 10 s session beyond its own 120 s
    assert untuned.combinations() == [{"replicator": "mirrormaker2", "mm2_worker.scheduled.rebalance.max.delay.ms": 300000,
                                       "mm2_worker.session.timeout.ms": 10000, "mm2_worker.heartbeat.interval.ms": 3000,
                                       "drain_timeout": 430.0}]
    assert untuned.out_dir != tuned.out_dir


def test_a_drill_with_a_standby_on_the_lock_file_also_runs_ours_with_the_lease_alone(tmp_path):
    from mirrordrill.harness.tools.bench.drills import _sweeps, lease_alone_label
    sweeps = _sweeps(Path("scenarios/replicator-node-loss.yaml"), 3, tmp_path, log=lambda m: None, reports=None)
    lease_alone, label = sweeps[-1]
    assert label == lease_alone_label() == "pyspark, lease alone (3 s)"
    assert lease_alone.repeat == 3 and lease_alone.combinations() == [{"replicator": "pyspark", "standby": "lease"}]
    assert len({s.out_dir for s, _ in sweeps}) == 3
    # a drill without a standby gets neither
    assert [label for _, label in _sweeps(Path("scenarios/quickstart.yaml"), 3, tmp_path,
                                          log=lambda m: None, reports=None)] == [None]
