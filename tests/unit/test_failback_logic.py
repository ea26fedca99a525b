"""Pure logic of failback: the record-by-record comparison and its expectations."""

import threading
from pathlib import Path
from types import SimpleNamespace

from mirrordrill.harness.drill import failback, failover
from mirrordrill.harness.drill.failback import _difference
from mirrordrill.harness.drill.replicators.setup import FlowSpec
from mirrordrill.harness.drill.results import FailbackSummary
from mirrordrill.harness.drill.summary import evaluate
from mirrordrill.harness.drill.validate import parse_scenario
from mirrordrill.replicator.policy import DefaultReplicationPolicy


def test_difference_counts_records_missing_per_partition_with_repeats():
    new = {("orders", 0): [b"a", b"b", b"b"], ("orders", 1): [b"c"]}
    old = {("orders", 0): [b"a", b"b"], ("orders", 1): []}
    assert _difference(new, old) == 2  # one of the two b's, and c
    assert _difference(old, new) == 0


def test_difference_does_not_match_records_across_partitions():
    assert _difference({("orders", 0): [b"a"]}, {("orders", 1): [b"a"]}) == 1


SCENARIO = """\
name: t
clusters: {primary: {}, dr: {}}
topics: [{name: orders, cluster: primary}]
replication: {flows: [{source: primary, target: dr}]}
timeline:
  - {at: 5s, do: unplanned_failover, from: primary, to: dr}
  - {at: 10s, do: failback, from: dr, to: primary}
duration: 20s
invariants: {rpo_records: 100, duplicates: 0}
expectations:
  failback.missing: 0
  failback.converge_s: "<= 60"
"""


def test_failback_expectations_are_judged_on_the_failback_figures():
    s = parse_scenario(SCENARIO, "t.yaml")
    failback = FailbackSummary.model_validate({"from": "dr", "to": "primary", "name": "dr->primary", "converged": True,
                                               "topics": 1, "records": 10, "missing": 0, "extra": 0,
                                               "converge_s": 75.0})
    rows = evaluate(s, [], [], [failback])
    assert [(r.name, r.passed, r.actual) for r in rows] == [
        ("failback.missing[dr->primary] == 0", True, 0),
        ("failback.converge_s[dr->primary] <= 60", False, 75.0)]


def test_restored_history_is_expected_of_the_bundled_replicator_only():
    text = SCENARIO.replace("do: failback, from: dr, to: primary}", "do: failback, from: dr, to: primary, restore_history: true}")
    s = parse_scenario(text + "  pyspark:\n    failback.history_records: '>= 500'\n", "t.yaml")
    figures = {"from": "dr", "to": "primary", "name": "dr->primary", "converged": True, "topics": 2, "records": 900,
               "missing": 0, "extra": 0, "converge_s": 20.0}
    restored = FailbackSummary.model_validate({**figures, "history_records": 400})
    rows = evaluate(s, [], [], [restored], replicator="pyspark")
    assert [(r.name, r.passed, r.actual) for r in rows][-1] == ("failback.history_records[dr->primary] >= 500", False, 400)
    refused = FailbackSummary.model_validate({**figures, "history_note": "MirrorMaker 2 cannot"})
    assert all(r.passed for r in evaluate(s, [], [], [refused], replicator="mirrormaker2"))


def test_a_failback_that_never_ran_fails_its_expectations():
    rows = evaluate(parse_scenario(SCENARIO, "t.yaml"), [], [], [])
    assert rows and not any(r.passed for r in rows)


def test_wait_converged_compares_a_snapshot_of_the_new_primary_with_the_rebuilt_one(monkeypatch):
    sides = {"new:9092": {("orders", 0): [b"a", b"b"]}, "old:9092": {("orders", 0): [b"a", b"b"]}}
    monkeypatch.setattr(failover, "current_lag", lambda ctx: 0)
    monkeypatch.setattr(failback, "compared_topics", lambda ctx, new, old, flows: {"orders": "dr.orders"})
    monkeypatch.setattr(failback, "_read", lambda bootstrap, topics, side, security=None: sides[bootstrap])
    env = SimpleNamespace(cluster=lambda name: SimpleNamespace(bootstrap=f"{name}:9092"))
    ctx = SimpleNamespace(env=env, stop_requested=threading.Event(), log=print, security_for=lambda name: {})
    result = failback.wait_converged(ctx, "new", "old", [], timeout_s=30, started_ms=failback.now_ms())
    assert result.model_dump(by_alias=True) == {"from": "new", "to": "old", "name": "new->old", "converged": True,
                                                "topics": 1, "records": 2, "missing": 0, "extra": 0,
                                                "converge_s": result.converge_s, "history_records": None,
                                                "history_note": None}


def test_restoring_history_compares_and_counts_the_old_primarys_own_records(monkeypatch):
    history = [b"h1", b"h2", b"h3"]
    sides = {"new:9092": {("orders", 0): [b"a"], ("old.orders", 0): history},
             "old:9092": {("orders", 0): [b"a"], ("old.orders", 0): history[:2]}}
    monkeypatch.setattr(failover, "current_lag", lambda ctx: 0)
    monkeypatch.setattr(failback, "_read", lambda bootstrap, topics, side, security=None: sides[bootstrap])
    monkeypatch.setattr(failback, "compared_topics",
                        lambda ctx, new, old, flows: {"orders": "new.orders", "old.orders": "orders"})
    env = SimpleNamespace(cluster=lambda name: SimpleNamespace(bootstrap=f"{name}:9092"))
    setup = SimpleNamespace(replication_policy=lambda alias: DefaultReplicationPolicy(),
                            flows=[FlowSpec("old", "new", topics=["orders"], settings={"tasks.max": 2})])
    ctx = SimpleNamespace(env=env, stop_requested=threading.Event(), log=print, security_for=lambda name: {},
                          replicator=SimpleNamespace(setup=setup))
    flows = failback.reversed_flows(ctx, "new", "old", restore_history=True)
    assert [(f.name, dict(f.settings)) for f in flows] == [
        ("new->old", {"tasks.max": "2", "mirrordrill.restore.history": "true"})]
    result = failback.wait_converged(ctx, "new", "old", flows, timeout_s=3, started_ms=failback.now_ms())
    # one restored record is still missing: not converged, and the history is counted on its own
    assert (result.converged, result.records, result.history_records, result.missing) == (False, 4, 3, 1)
    sides["old:9092"][("old.orders", 0)] = history
    result = failback.wait_converged(ctx, "new", "old", flows, timeout_s=3, started_ms=failback.now_ms())
    assert (result.converged, result.history_records, result.missing, result.extra) == (True, 3, 0, 0)


class _Replicator:
    """A replicator that writes what happens to it into the drill's event list."""

    def __init__(self, name, events, setup, refuse=None):
        self.name, self.events, self.setup, self.refuse = name, events, setup, refuse
        self.cannot_restore_history = None

    def start(self):
        if self.refuse:
            raise self.refuse
        self.events.append(f"start {self.name}")

    def stop(self):
        self.events.append(f"stop {self.name}")

    def count_target_from_now(self):
        pass

    def forget_source_positions(self, source):
        pass

    def log_paths(self):
        return {}


def _switch_back(monkeypatch, refuse_first_reprotect=None, switch_fails=None, events=None):
    """Run a failback with switch back against fakes; returns (events, ctx)."""
    events = [] if events is None else events
    setup = SimpleNamespace(flows=[FlowSpec("old", "new", topics=["orders"])])
    made = iter(["copy back", "re-protect", "re-protect (after)"])

    def new_replicator(flows, where):
        name = next(made)
        refuse = refuse_first_reprotect if name == "re-protect" else None
        return _Replicator(name, events, SimpleNamespace(flows=flows), refuse=refuse)

    ctx = SimpleNamespace(replicator=_Replicator("original", events, setup), retired_replicators=[],
                          new_replicator=new_replicator, out_dir=Path("/nonexistent"), wiped_at={},
                          failbacks=[], producers=[], log=lambda m: None,
                          record=lambda *a, **k: None)
    monkeypatch.setattr(failback, "_wipe_and_start", lambda ctx, name: events.append(f"wipe {name}"))
    monkeypatch.setattr(failback, "_observe_copy", lambda *a: None)
    monkeypatch.setattr(failback, "wait_converged", lambda *a, **k: FailbackSummary(
        from_="new", to="old", name="new->old", converged=True, topics=1, records=1, missing=0, extra=0, converge_s=1.0))
    monkeypatch.setattr(failover, "ensure_topics", lambda ctx, cluster, topics: events.append(f"topics on {cluster}"))
    def planned(ctx, step, restart_finished):
        events.append(f"switch {step.source}->{step.target} (replicating: {ctx.replicator.name})")
        if switch_fails:
            raise switch_fails
        return "moved"
    monkeypatch.setattr(failover, "planned", planned)
    step = SimpleNamespace(source="new", target="old", restore_history=False, switch_back=True, timeout=60)
    failback.run(ctx, step)
    return events, ctx


def test_the_re_protect_is_live_before_the_switch_back_and_takes_over_after_it(monkeypatch):
    events, ctx = _switch_back(monkeypatch)
    assert events == ["stop original", "wipe old", "start copy back", "topics on old", "start re-protect",
                      "switch new->old (replicating: copy back)", "stop copy back"]
    assert ctx.replicator.name == "re-protect"
    assert sorted(r.name for r in ctx.retired_replicators) == ["copy back", "original"]  # stopped at the end too


def test_without_task_slots_for_both_the_re_protect_starts_after_the_switch(monkeypatch):
    from mirrordrill.harness.lab.spark.deployment import SparkDeploymentError
    events, ctx = _switch_back(monkeypatch, refuse_first_reprotect=SparkDeploymentError("needs 8 task slots"))
    assert events == ["stop original", "wipe old", "start copy back", "topics on old",
                      "switch new->old (replicating: copy back)", "stop copy back", "start re-protect (after)"]
    assert ctx.replicator.name == "re-protect (after)"
    assert "re-protect" not in [r.name for r in ctx.retired_replicators]


def test_a_failed_switch_back_stops_the_re_protect_and_keeps_the_copy_back(monkeypatch):
    # the applications stay on the new primary: the copy back protects it; nobody writes the old one
    import pytest
    events: list[str] = []
    with pytest.raises(RuntimeError, match="drain timed out"):
        _switch_back(monkeypatch, switch_fails=RuntimeError("drain timed out"), events=events)
    assert events[-2:] == ["switch new->old (replicating: copy back)", "stop re-protect"]
