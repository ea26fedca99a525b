"""The decisions around a driver pair that need no broker: which driver's status is the node's, when an empty
lease group means the lease is free, the planted standby faults, and the settings a standby needs.

The pair itself, with real brokers and processes: tests/integration/test_pyspark_standby.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mirrordrill.harness.drill.replicators.pyspark_standby import DriverPair, lease_settings, transactional_settings
from mirrordrill.primitives.process import ManagedProcess
from mirrordrill.replicator.config.flow import FlowConfig
from mirrordrill.replicator.config.settings import ClusterConfig, ReplicatorConfig
from mirrordrill.replicator.lease import Lease, _EmptyGroupWatch
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


def test_an_empty_group_frees_the_lease_once_a_holder_was_seen_or_after_a_whole_session(monkeypatch):
    now = [100.0]
    monkeypatch.setattr("mirrordrill.replicator.lease.time.monotonic", lambda: now[0])
    fresh = _EmptyGroupWatch(session_s=6.0)
    assert not fresh.vacant(empty=True), "two drivers starting together must not both take it at once"
    now[0] += 6.0
    assert fresh.vacant(empty=True)
    watched = _EmptyGroupWatch(session_s=6.0)
    assert not watched.vacant(empty=False)
    assert watched.vacant(empty=True), "the holder it saw is gone: its session expired"


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


def test_no_flow_with_the_default_filters_copies_the_lease_topic():
    lease = Lease({"bootstrap.servers": "127.0.0.1:9"}, "drill-7-lease.dr")
    assert lease.topic == "drill-7-lease.dr.internal"
    assert not FlowConfig(source="dr", target="primary").topic_selector().should_replicate_topic(lease.topic)
    assert FlowConfig(source="dr", target="primary").topic_selector().should_replicate_topic("drill-7-orders")
