"""MirrorMaker 2 with several nodes per target, and the steps that act on one replicator node
(issue 47): the drill file's fields and steps, the files MM2 gets, which node holds a task, and
that a paused node is resumed on every way out of the step."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from mirrordrill.harness.drill.actions.registry import action_for
from mirrordrill.harness.drill.engine import Drill
from mirrordrill.harness.drill.replicators import FlowSpec, ReplicationSetup, mm2_assignment, mm2_group
from mirrordrill.harness.drill.validate import parse_scenario
from mirrordrill.harness.tools.sweep.params import SweepError, apply_params, check_key, validate_drill
from mirrordrill.primitives.process import ManagedProcess
from tests.unit.test_replicator_adapters import environment, mm2, props
from tests.unit.test_scenario_validation import BASE, line_of, only_problem

MM2_BASE = BASE.replace("replication:\n", "replication:\n  replicator: mirrormaker2\n", 1)


def with_mm2(fields: str, text: str = MM2_BASE) -> str:
    return text.replace("replication:\n", f"replication:\n  mirrormaker2: {{{fields}}}\n", 1)


def with_step(step: str, text: str = MM2_BASE) -> str:
    # a node fault may make at-least-once delivery copy again: the invariant needs its limit
    return text + f"invariants: {{duplicates: 1000}}\ntimeline:\n  - {{{step}}}\n"


# ======================================================================================
# the drill file
# ======================================================================================
def test_nodes_and_worker_settings_reach_the_adapter(tmp_path):
    text = with_mm2("nodes: 2, worker: {scheduled.rebalance.max.delay.ms: 5000, session.timeout.ms: 6000}")
    got = Drill(parse_scenario(text, "d.yaml"), tmp_path / "d.yaml", tmp_path / "out")._replicator_options()
    assert got["nodes"] == 2
    assert got["worker_settings"] == {"scheduled.rebalance.max.delay.ms": "5000", "session.timeout.ms": "6000"}


@pytest.mark.parametrize("fields, needle, message", [
    ("nodes: 0", "nodes: 0", "must be at least 1"),
    ("nodes: 40", "nodes: 40", "MirrorMaker 2 processes per target"),
    ("worker: {group.id: mine}", "group.id", "group.id: set by the harness"),
    ("worker: {listeners: 'http://0.0.0.0:8083'}", "listeners", "listeners: set by the harness"),
])
def test_bad_mm2_fields_are_refused_at_their_line(fields, needle, message):
    text = with_mm2(fields)
    p = only_problem(text)
    assert p.field.startswith("replication.mirrormaker2."), p.field
    assert p.line == line_of(text, needle)
    assert message in p.message, p.message


@pytest.mark.parametrize("text, field, message", [
    (with_step("at: 5s, do: kill_replicator_node, node: 2", with_mm2("nodes: 2")), "timeline[0].node",
     "node 2 does not exist; the replicator runs nodes 0..1"),
    (with_step("at: 5s, do: kill_replicator_node"), "timeline[0]", "needs the node by index"),
    (with_step("at: 5s, do: kill_replicator_node, node: 0, copying: {topic: orders}"), "timeline[0]",
     "one of the two"),
    (with_step("at: 5s, do: pause_replicator_node, node: 0"), "timeline[0]", "needs a duration"),
    (with_step("at: 5s, do: bounce_replicator_node, node: 0, duration: 5s"), "timeline[0]",
     "'duration' applies to pause_replicator_node only"),
    (with_step("at: 5s, do: kill_replicator_node, copying: {topic: invoices, partition: 1}"),
     "timeline[0].copying.topic", "topic 'invoices' is not declared on a flow's source"),
    (with_step("at: 5s, do: kill_replicator_node, node: 0",
               BASE.replace("replication:\n", "replication:\n  replicator: command\n  command: sh r.sh\n", 1)),
     "timeline[0]", "needs a replicator made of nodes"),
])
def test_bad_node_steps_are_refused_at_the_step(text, field, message):
    p = only_problem(text)
    assert p.field == field, (p.field, p.message)
    assert message in p.message, p.message
    assert p.line == line_of(text, "_replicator_node")


def test_good_node_steps_are_accepted_and_described():
    text = with_step("at: 5s, do: kill_replicator_node, copying: {topic: orders, partition: 2}", with_mm2("nodes: 2"))
    text += "  - {at: 9s, do: pause_replicator_node, node: 1, duration: 3s}\n"
    s = parse_scenario(text, "d.yaml")
    kill, pause = s.timeline
    assert action_for(kill).describe(kill) == "kill_replicator_node copying orders-2"
    assert (pause.node, pause.duration) == (1, 3.0)


def test_the_sweep_varies_nodes_and_worker_settings():
    drill = yaml.safe_load(MM2_BASE)
    check_key("mm2_worker.scheduled.rebalance.max.delay.ms", 5000)
    out = apply_params(drill, {"mm2_nodes": 2, "mm2_worker.scheduled.rebalance.max.delay.ms": 300000})
    assert out["replication"]["mirrormaker2"] == {"nodes": 2, "worker": {"scheduled.rebalance.max.delay.ms": 300000}}
    validate_drill(out)
    with pytest.raises(SweepError, match="group.id: set by the harness"):
        validate_drill(apply_params(drill, {"mm2_worker.group.id": "x"}))


# ======================================================================================
# the processes and their files
# ======================================================================================
def test_each_target_gets_n_processes_with_the_same_file_but_their_own_loopback_listener(tmp_path):
    setup = ReplicationSetup(environment(tmp_path), [FlowSpec("east", "west")], workdir=tmp_path / "r")
    replicator = mm2(setup, nodes=2, worker_settings={"scheduled.rebalance.max.delay.ms": "5000"})
    a, b = replicator.nodes
    assert (a.name, b.name) == ("mirrormaker2 west node 0", "mirrormaker2 west node 1")
    assert a.workdir != b.workdir and a.process and b.process and a.process.argv[-2:] == ["--clusters", "west"]
    a.rest_port, b.rest_port = 12001, 12002
    pa, pb = props(replicator.render(a)), props(replicator.render(b))
    # one group: several nodes send task configs to the leader over the internal REST API
    assert pa["dedicated.mode.enable.internal.rest"] == "true"
    assert (pa.pop("listeners"), pb.pop("listeners")) == ("http://127.0.0.1:12001", "http://127.0.0.1:12002")
    assert pa == pb
    assert pa["west.scheduled.rebalance.max.delay.ms"] == "5000"  # a worker setting: per target, where MM2 reads it
    # nothing else MM2 could bind to another address
    assert not [k for k in pa if k.endswith(("listeners", "advertised.host.name"))]


def test_one_node_keeps_one_process_without_rest(tmp_path):
    setup = ReplicationSetup(environment(tmp_path), [FlowSpec("east", "west")], workdir=tmp_path / "r")
    replicator = mm2(setup)
    (node,) = replicator.nodes
    assert node.name == "mirrormaker2 west" and "listeners" not in props(replicator.render(node))


# ======================================================================================
# which node holds which task
# ======================================================================================
class FakeRecord:
    def __init__(self, key: str, value: str | None, offset: int):
        self._k, self._v, self._o = key.encode(), None if value is None else value.encode(), offset

    def key(self):
        return self._k

    def value(self):
        return self._v

    def partition(self):
        return 0

    def offset(self):
        return self._o


def test_the_assignment_is_read_from_connects_status_and_config_topics(tmp_path, monkeypatch):
    setup = ReplicationSetup(environment(tmp_path), [FlowSpec("east", "west")], workdir=tmp_path / "r")
    replicator = mm2(setup, nodes=2)
    replicator.nodes[0].rest_port, replicator.nodes[1].rest_port = 12001, 12002
    topics = {
        "mm2-status.east.internal": [
            ('status-task-MirrorSourceConnector-0', '{"state":"RUNNING","worker_id":"127.0.0.1:12001/east->west"}'),
            ('status-task-MirrorSourceConnector-1', '{"state":"RUNNING","worker_id":"127.0.0.1:12002/east->west"}'),
            ('status-connector-MirrorSourceConnector', '{"state":"RUNNING","worker_id":"127.0.0.1:12001/east->west"}'),
            # the newest record of a key wins: task 1 moved to node 0
            ('status-task-MirrorSourceConnector-1', '{"state":"RUNNING","worker_id":"127.0.0.1:12001/east->west"}'),
            ('status-task-MirrorCheckpointConnector-0', '{"state":"UNASSIGNED","worker_id":"127.0.0.1:12002/east->west"}'),
        ],
        "mm2-configs.east.internal": [
            ('task-MirrorSourceConnector-0', '{"properties":{"task.assigned.partitions":"orders-0,my-topic-2"}}'),
            ('task-MirrorSourceConnector-1', '{"properties":{"task.assigned.partitions":"orders-1"}}'),
            ('commit-MirrorSourceConnector', '{"tasks":2}'),
        ],
    }
    monkeypatch.setattr(mm2_assignment, "read_topic", lambda bootstrap, topic, security=None: [
        FakeRecord(k, v, i) for i, (k, v) in enumerate(topics.get(topic, []))])
    assert replicator.task_assignment() == {"east->west MirrorSourceConnector-0": 0,
                                            "east->west MirrorSourceConnector-1": 0,
                                            "east->west MirrorCheckpointConnector-0": "UNASSIGNED"}
    assert replicator.node_copying("my-topic", 2) == 0
    topics["mm2-status.east.internal"].append(
        ('status-task-MirrorSourceConnector-0', '{"state":"RUNNING","worker_id":"127.0.0.1:12002/east->west"}'))
    assert replicator.node_copying("orders", 0) == 1
    assert mm2_group.node_of_worker(replicator.nodes, "east->west", "127.0.0.1:19999/east->west") is None


def test_each_node_fault_keeps_the_assignment_before_it_and_after_it(tmp_path, monkeypatch):
    setup = ReplicationSetup(environment(tmp_path), [FlowSpec("east", "west")], workdir=tmp_path / "r")
    replicator = mm2(setup, nodes=2)
    now = iter([{"t-0": 0, "t-1": 1}, {"t-0": 0, "t-1": 0}, {"t-0": 1, "t-1": 1}])
    monkeypatch.setattr(replicator, "task_assignment", lambda: next(now))
    replicator.note_node_fault("kill_replicator_node", 1, 1000)
    replicator.note_node_fault("bounce_replicator_node", 0, 2000)
    replicator.stop()  # the last fault's "after" is read while the group still runs
    first, second = replicator.node_faults()
    assert (first["node_name"], first["before"], first["after"]) == ("mirrormaker2 west node 1", {"t-0": 0, "t-1": 1},
                                                                     {"t-0": 0, "t-1": 0})
    assert (second["before"], second["after"]) == ({"t-0": 0, "t-1": 0}, {"t-0": 1, "t-1": 1})
    assert mm2_assignment.moved(first["before"], first["after"]) == {"t-1": [1, 0]}


# ======================================================================================
# pause_replicator_node: never left stopped
# ======================================================================================
def _state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


@pytest.fixture
def two_sleepers(tmp_path, monkeypatch):
    """An MM2 adapter of two nodes whose processes are stand-ins (sleep), started."""
    setup = ReplicationSetup(environment(tmp_path), [FlowSpec("east", "west")], workdir=tmp_path / "r")
    replicator = mm2(setup, nodes=2)
    for node in replicator.nodes:
        node.process = ManagedProcess(name=node.name, argv=[sys.executable, "-c", "import time; time.sleep(60)"],
                                      log_path=node.log_path)
        node.process.start()
    monkeypatch.setattr(replicator, "task_assignment", lambda: {"t-0": 0})
    yield replicator
    for node in replicator.nodes:
        assert node.process is not None
        node.process.kill()


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads process states from /proc")
def test_a_paused_node_is_resumed_when_the_step_ends(two_sleepers):
    ctx = SimpleNamespace(replicator=two_sleepers, stop_requested=threading.Event())
    step = parse_scenario(with_step("at: 5s, do: pause_replicator_node, node: 1, duration: 500ms",
                                    with_mm2("nodes: 2")), "d.yaml").timeline[0]
    paused, other = two_sleepers.nodes[1].process, two_sleepers.nodes[0].process
    seen: list[str] = []
    watcher = threading.Timer(0.25, lambda: seen.extend([_state(paused.pid), _state(other.pid)]))
    watcher.start()
    outcome = action_for(step).apply(ctx, step)
    watcher.join()
    assert seen == ["T", "S"]  # only the named node was stopped
    assert _state(paused.pid) != "T" and not paused.paused
    assert "SIGSTOP" in outcome and "SIGCONT" in outcome


class CtrlCWhileWaiting:
    """``stop_requested`` of a drill whose user presses Ctrl-C mid-pause: in the main thread, where
    the engine runs its steps, SIGINT raises KeyboardInterrupt out of the wait."""

    def __init__(self, after_s: float):
        self.after_s = after_s

    def wait(self, timeout: float | None = None) -> bool:
        time.sleep(self.after_s)
        raise KeyboardInterrupt


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads process states from /proc")
def test_a_paused_node_is_resumed_when_the_run_is_interrupted(two_sleepers):
    ctx = SimpleNamespace(replicator=two_sleepers, stop_requested=CtrlCWhileWaiting(0.3))
    step = parse_scenario(with_step("at: 5s, do: pause_replicator_node, node: 0, duration: 60s",
                                    with_mm2("nodes: 2")), "d.yaml").timeline[0]
    proc = two_sleepers.nodes[0].process
    seen: list[str] = []
    watcher = threading.Timer(0.15, lambda: seen.append(_state(proc.pid)))
    watcher.start()
    with pytest.raises(KeyboardInterrupt):
        action_for(step).apply(ctx, step)
    watcher.join()
    assert seen == ["T"]  # it was stopped while the step waited
    assert _state(proc.pid) != "T" and not proc.paused
    assert two_sleepers.node_faults()[0]["step"] == "pause_replicator_node"
