"""The timeline's unmet ``when`` conditions, in words, for the console table and the report."""

from __future__ import annotations

from mirrordrill.harness.drill.results import DrillSummary


def unmet_conditions(summary: DrillSummary) -> list[str]:
    """One line per step whose condition did not hold before it ran: what came after it is
    not the replicator's doing alone (replication had not caught up when the fault began)."""
    return [f"condition not met before step '{e.name}': {e.condition}; the step ran anyway at "
            f"{e.start_ts_ms} (epoch ms), so loss or lag after it is not the replicator's alone"
            for e in summary.unmet_conditions()]
