"""MirrorMaker 2 as a group of two dedicated-mode nodes, one of which is killed mid-load (issue 47).

Real MM2, real brokers, through the drill engine: both nodes hold tasks (read from Connect's
status topic), ``kill_replicator_node`` SIGKILLs the node running the task that copies
``orders-0``, the other node takes its tasks over, the checker finds nothing lost, and
summary.json's ``node_faults`` shows the move.
"""

from __future__ import annotations

import re

import pytest

from mirrordrill.harness.drill.engine import Drill
from mirrordrill.harness.drill.validate import parse_scenario
from tests.conftest import processes_under

pytestmark = pytest.mark.integration

# scheduled.rebalance.max.delay.ms: 5000. Connect keeps a departed worker's tasks unassigned for
# this long (300 s by default) in case it comes back; it starts counting only once the group
# noticed the loss, after session.timeout.ms (Connect's default, 10 s). 5 s puts the takeover
# about 15 s after the kill, inside the 35 s of load left after it, instead of minutes later.
# tasks.max: 4 gives the source connector a task per partition, so both nodes get some.
TWO_NODES = """\
name: mm2-two-nodes
clusters:
  primary: {brokers: 1}
  dr: {brokers: 1}
topics:
  - {name: orders, cluster: primary, partitions: 4}
replication:
  replicator: mirrormaker2
  mirrormaker2:
    nodes: 2
    worker: {scheduled.rebalance.max.delay.ms: 5000}
  flows:
    - {source: primary, target: dr, topics: [orders], settings: {tasks.max: 4}}
load:
  producers:
    - {name: orders, cluster: primary, topics: [orders], rate: 100, record_size: {fixed: 128}}
duration: 45s
drain_timeout: 120s
# at-least-once: the tasks taken over replay what the killed node copied after its last offset
# flush; the test is about the move and the loss, so the bound is the load of the whole drill
invariants: {duplicates: 6000}
timeline:
  - {at: 10s, do: kill_replicator_node, copying: {topic: orders, partition: 0}}
expectations:
  lost: 0
"""


def test_a_killed_node_s_tasks_move_to_the_other_and_nothing_is_lost(tmp_path, artifacts):
    path = tmp_path / "two-nodes.yaml"
    path.write_text(TWO_NODES)
    summary = Drill(parse_scenario(TWO_NODES, str(path)), path, tmp_path / "run", artifacts=artifacts
                    ).run().summary.to_json()
    assert summary["error"] is None, summary["error"]
    (flow,) = summary["flows"]
    assert flow["acked"] > 4000 and flow["lost"] == 0, flow
    kill = next(e for e in summary["timeline"] if e["kind"] == "kill_replicator_node")
    assert kill["outcome"] == "ok", kill
    (fault,) = summary["node_faults"]
    killed, survivor = fault["node"], 1 - fault["node"]
    before, after = fault["before"], fault["after"]
    source_tasks = [t for t in before if "MirrorSourceConnector-" in t]
    assert len(source_tasks) == 4, before
    assert {before[t] for t in before} == {0, 1}, before  # both nodes held tasks
    # the node that ran orders-0's task was the one killed (copying:), and it held tasks
    assert any(v == killed for v in before.values())
    # after: every task of the killed node runs on the survivor, and none on the killed one
    assert all(after.get(t) == survivor for t, v in before.items() if v == killed), (before, after)
    assert killed not in after.values(), after
    assert summary["passed"] is True, [e for e in summary["expectations"] if not e["passed"]]
    # each node's internal REST server listened on loopback only
    logs = sorted((tmp_path / "run").rglob("mm2.log"))
    assert len(logs) == 2, logs
    for log in logs:
        text = log.read_text(errors="replace")
        # one server per process (the herders' logged worker configs show Connect's default
        # listeners, which dedicated mode never binds)
        servers = re.findall(r"REST server listening at (\S+),", text)
        assert len(servers) == 1 and re.fullmatch(r"http://127\.0\.0\.1:\d+/", servers[0]), (log, servers)
    assert processes_under(tmp_path) == []
