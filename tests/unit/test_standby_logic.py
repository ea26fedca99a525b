"""The decisions around a driver pair that need no broker: which driver's status is the node's, when an empty
lease group means the lease is free, the planted standby faults, and the settings a standby needs.

The pair itself, with real brokers and processes: tests/integration/test_pyspark_standby.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from pathlib import Path

import pytest

from mirrordrill.harness.drill.replicators.pyspark_standby import DriverPair, lease_settings, transactional_settings
from mirrordrill.primitives.process import ManagedProcess
from mirrordrill.replicator.config.flow import FlowConfig
from mirrordrill.replicator.config.settings import ClusterConfig, ReplicatorConfig
from mirrordrill.replicator.lease import Lease, LocalLock, _HolderWatch
from mirrordrill.replicator.planted_faults import FAULT_ENV, SUITE_ENV, StandbyFault


def _pair(tmp_path: Path) -> DriverPair:
    def proc(name: str) -> ManagedProcess:
        return ManagedProcess(name=name, argv=["true"], log_path=tmp_path / f"{name}.log")
    return DriverPair(proc("a"), proc("b"), tmp_path / "a.json", tmp_path / "b.json")


def _write(path: Path, role: str, written_ms: int) -> None:
    path.write_text(json.dumps({"role": role, "written_ms": written_ms}))


def test_the_nodes_status_is_the_newest_one_saying_active(tmp_path):
    pair = _pair(tmp_path)
    assert pair.status_path() == pair.first_status, "before either writes, the first driver's"
    _write(pair.first_status, "active", 1000)
    _write(pair.second_status, "standby", 2000)
    assert pair.active() is pair.first
    _write(pair.second_status, "active", 3000)  # took over; the killed first's last status still says active
    assert pair.active() is pair.second and pair.status_path() == pair.second_status
    _write(pair.first_status, "lost", 4000)  # a resumed driver that learned its lease was taken
    assert pair.active() is pair.second


def test_a_killed_driver_starts_again_only_once_the_new_active_copies(tmp_path):
    # on a shared machine the restart's JVMs took the cores the takeover needed for its first records
    def proc(name: str) -> ManagedProcess:
        return ManagedProcess(name=name, argv=["sleep", "60"], log_path=tmp_path / f"{name}.log")
    pair = DriverPair(proc("a"), proc("b"), tmp_path / "a.json", tmp_path / "b.json")
    copied_at: list[float] = []

    def take_over() -> None:
        _write(pair.second_status, "active", 2000)  # the lease: the standby is the active one now
        time.sleep(0.6)
        copied_at.append(time.monotonic())
        pair.second_status.write_text(json.dumps({"role": "active", "written_ms": 3000,
                                                  "startup": {"first_record_s": 1.2}}))
    pair.first.start()
    pair.second.start()
    try:
        _write(pair.first_status, "active", 1000)
        _write(pair.second_status, "standby", 1001)
        pair.first.kill()
        threading.Thread(target=take_over).start()
        restarted_at: list[float] = []
        start = pair.first.start
        pair.first.start = lambda: (restarted_at.append(time.monotonic()), start())  # type: ignore[method-assign]
        threading.Timer(1.5, lambda: _write(pair.first_status, "standby", 4000)).start()
        said = pair.replace_killed(pair.first, timeout_s=10)
        returned_at = time.monotonic()
        assert pair.first.running and copied_at and restarted_at[0] >= copied_at[0]
        # the step returns with the node whole again: the restarted driver stands by
        assert said.startswith("b took over; a started again and stands by after ") and returned_at - restarted_at[0] > 0.5
    finally:
        pair.first.kill()
        pair.second.kill()


def test_a_freed_lock_is_the_holders_death_only_when_the_recorded_holder_is_gone(tmp_path):
    # the holder took the lease through the group while a paused driver held the lock; that one exited
    # (the lock is free) and a standby started meanwhile must not take the lease from the live holder
    holder = subprocess.Popen(["sleep", "60"])
    lock = LocalLock(tmp_path / "lease.lock")
    lock.path.write_text(str(holder.pid))  # what the holder's record_holder wrote
    lease = Lease({"bootstrap.servers": "127.0.0.1:9"}, "g", lock)
    try:
        assert not lease._lock_freed_by_holder()
        other = LocalLock(lock.path)
        assert other.try_acquire(), "the standby let the lock go, for the holder to take"
        other.release()
        holder.kill()
        holder.wait()
        assert lease._lock_freed_by_holder() and lock.held  # the holder died: the lock is its death
        lock.record_holder()
        assert lock.path.read_text() == str(os.getpid()) and not lock.holder_alive()  # itself is no other holder
    finally:
        holder.kill()
        lock.release()


def test_an_empty_group_frees_the_lease_once_a_holder_was_seen_or_after_a_whole_session(monkeypatch):
    now = [100.0]
    monkeypatch.setattr("mirrordrill.replicator.lease.time.monotonic", lambda: now[0])
    fresh = _HolderWatch(session_s=6.0)
    assert fresh.vacant(empty=True) is None, "two drivers starting together must not both take it at once"
    now[0] += 6.0
    assert fresh.vacant(empty=True)
    watched = _HolderWatch(session_s=6.0)
    assert watched.vacant(empty=False) is None
    assert watched.vacant(empty=True), "the holder it saw is gone: its session expired"


def test_a_holder_whose_beats_stand_still_for_a_session_is_replaced_while_its_membership_lasts(monkeypatch):
    # taken before the coordinator expires the silent member: a paused holder, resumed, is then fenced
    # rather than joining again and replacing the new holder
    now = [100.0]
    monkeypatch.setattr("mirrordrill.replicator.lease.time.monotonic", lambda: now[0])
    watch = _HolderWatch(session_s=6.0)
    for beat in range(1, 20):  # a live holder: its count rises every half second
        assert watch.vacant(empty=False, beats=beat) is None
        now[0] += 0.5
    now[0] += 5.0
    assert watch.vacant(empty=False, beats=19) is None, "5.5 s of silence is inside the session"
    now[0] += 1.0
    assert "beats stopped 6.5s ago" in (watch.vacant(empty=False, beats=19) or "")


def test_planted_standby_faults_need_the_mutation_suite():
    assert StandbyFault.from_env({}) is None
    fault = StandbyFault.from_env({FAULT_ENV: "zombie-keeps-writing", SUITE_ENV: "1"})
    assert fault is not None and fault.id_prefix("drill-", "123") == "drill-123."
    never = StandbyFault.from_env({FAULT_ENV: "standby-never-takes-over", SUITE_ENV: "1"})
    assert never is not None and never.never_takes_over and never.id_prefix("drill-", "123") == "drill-"


def test_a_standby_needs_transactional_flows():
    clusters = {"A": ClusterConfig(bootstrap_servers=["127.0.0.1:1"]), "B": ClusterConfig(bootstrap_servers=["127.0.0.1:2"])}
    with pytest.raises(ValueError, match="needs transactional flows"):
        ReplicatorConfig(clusters=clusters, flows=[FlowConfig(source="A", target="B")], lease_group="g")
    ReplicatorConfig(clusters=clusters, flows=[FlowConfig(source="A", target="B", transactional=True)], lease_group="g")


def test_the_harness_gives_both_drivers_one_lease_under_the_drills_prefix(tmp_path):
    keys = lease_settings("drill-7-", "dr", tmp_path)
    assert keys["mirrordrill.lease.group"] == "drill-7-lease.dr"
    assert keys["mirrordrill.lease.lock.file"] == str(tmp_path / "lease.lock")
    assert transactional_settings("drill-7-") == {"mirrordrill.transactional": "true",
                                                  "mirrordrill.transactional.id.prefix": "drill-7-"}
    # standby: lease — the drivers share the lease alone, as on two machines: no lock file
    assert lease_settings("drill-7-", "dr", None) == {"mirrordrill.lease.group": "drill-7-lease.dr"}


def test_a_drill_or_a_sweep_asks_for_the_lease_alone_with_standby_lease():
    from mirrordrill.harness.drill.schema import ReplicationDef
    from mirrordrill.harness.tools.sweep.params import SweepError, apply_params
    flows = [{"source": "a", "target": "b", "topics": ["t"]}]
    assert ReplicationDef.model_validate({"standby": "lease", "flows": flows}).standby == "lease"
    with pytest.raises(ValueError):
        ReplicationDef.model_validate({"standby": "lock", "flows": flows})
    drill = {"replication": {"replicator": "pyspark", "standby": True, "flows": flows}}
    assert apply_params(drill, {"standby": "lease"})["replication"]["standby"] == "lease"
    assert apply_params(drill, {"standby": "false"})["replication"]["standby"] is False
    with pytest.raises(SweepError, match="valid values are true, false, lease"):
        apply_params(drill, {"standby": "maybe"})


def test_no_flow_with_the_default_filters_copies_the_lease_topic():
    lease = Lease({"bootstrap.servers": "127.0.0.1:9"}, "drill-7-lease.dr")
    assert lease.topic == "drill-7-lease.dr.internal"
    assert not FlowConfig(source="dr", target="primary").topic_selector().should_replicate_topic(lease.topic)
    assert FlowConfig(source="dr", target="primary").topic_selector().should_replicate_topic("drill-7-orders")
