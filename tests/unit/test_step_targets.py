"""A step whose target an earlier step brought back is valid: the timeline walk forgets what was revived."""

from __future__ import annotations

import pytest

from mirrordrill.harness.drill.validate import parse_scenario
from tests.unit.test_scenario_validation import BASE

FILE = "d.yaml"

REVIVED = [
    ("failover onto a cluster started again", "  - {at: 3s, do: kill_cluster, cluster: dr}\n"
                                              "  - {at: 4s, do: start_cluster, cluster: dr}\n"
                                              "  - {at: 9s, do: unplanned_failover, from: primary, to: dr}\n"),
    ("broker brought back by restart_broker", "  - {at: 3s, do: kill_broker, cluster: primary, broker: 1}\n"
                                              "  - {at: 4s, do: restart_broker, cluster: primary, broker: 1}\n"
                                              "  - {at: 5s, do: pause_broker, cluster: primary, broker: 1}\n"
                                              "  - {at: 6s, do: resume_broker, cluster: primary, broker: 1}\n"),
    ("partition added before the step names it", "  - {at: 3s, do: add_partitions, cluster: primary, topic: orders, "
                                                 "partitions: 6}\n"
                                                 "  - {at: 4s, do: kill_broker, cluster: primary, "
                                                 "leader_of: {topic: orders, partition: 5}}\n"),
    ("failback onto the killed old primary", "  - {at: 5s, do: unplanned_failover, from: primary, to: dr}\n"
                                             "  - {at: 9s, do: failback, from: dr, to: primary, switch_back: true}\n"
                                             "  - {at: 12s, do: stop_broker, cluster: primary, broker: 1}\n"),
]


@pytest.mark.parametrize("timeline", [r[1] for r in REVIVED], ids=[r[0] for r in REVIVED])
def test_a_target_brought_back_by_an_earlier_step_is_valid(timeline):
    parse_scenario(BASE + "invariants: {rpo_records: 1000, duplicates: 1000}\ntimeline:\n" + timeline, FILE)
