"""The plan validation hands to the run: what the replicator and the checker read is what was checked."""

from __future__ import annotations

from mirrordrill.harness.drill.existing_checks import FORCED_REPLICATOR_SETTINGS
from mirrordrill.harness.drill.validate import check_text
from tests.unit.test_existing_clusters import DRILL


def test_the_plan_a_drill_on_existing_clusters_runs_holds_the_anchored_patterns_and_the_forced_settings():
    """Validation reads the patterns as written; the run's plan must read them anchored to the owned
    prefix, or the replicator could copy a team's topics (and touch its ACLs or its heartbeats)."""
    checked = check_text(DRILL.replace("topics: [md-t-orders]}]}", "topics: ['md-t-(?:orders|x)']}]}"), "d.yaml")
    [flow] = checked.plan.flows
    assert flow.topics == (r"md\-t\-(?:(?:orders|x))",)
    assert {k: flow.settings[k] for k in FORCED_REPLICATOR_SETTINGS} == {k: v for k, (v, _) in
                                                                          FORCED_REPLICATOR_SETTINGS.items()}
    [pair] = checked.plan.check_pairs
    assert (pair.origin, pair.target, pair.topic_map) == ("md-t-primary", "md-t-dr",
                                                          {"md-t-primary.md-t-orders": "md-t-orders"})
