"""Expectations judged against the checked figures, and the table a person reads at the end."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mirrordrill.harness.drill.invariants import LoadFacts, evaluate_invariants
from mirrordrill.harness.drill.metrics import METRICS
from mirrordrill.harness.drill.results import DrillSummary, ExpectationRow, FailbackSummary, FailoverSummary, FlowSummary
from mirrordrill.harness.drill.schema import Scenario


def evaluate(scenario: Scenario, flows: list[FlowSummary], failovers: list[FailoverSummary],
             failbacks: Sequence[FailbackSummary] = (), replicator: str | None = None,
             load: LoadFacts | None = None, interrupted: bool = False) -> list[ExpectationRow]:
    """One row per expectation and flow (or group, or failback) it applies to, for ``replicator``
    (default: the file's own). With ``load`` (what a run measured), the built-in invariants' rows first."""
    kind = replicator or scenario.replication.replicator
    rows = evaluate_invariants(scenario, kind, flows, load, interrupted) if load is not None else []
    for e in scenario.parsed_expectations(kind):
        metric = METRICS[e.metric]
        targets: list[tuple[str, FlowSummary | FailoverSummary | FailbackSummary]]
        if metric.family == "failback":
            targets = [(f.name, f) for f in failbacks if e.scope in (None, f.name)]
        elif metric.family == "failover":
            targets = [(f.group, f) for f in failovers if e.scope in (None, f.group)]
        else:
            targets = [(f.name, f) for f in flows if e.scope in (None, f.name, f"{f.source}->{f.target}")]
        if not targets:
            rows.append(ExpectationRow(name=e.name, passed=False, actual=None, limit=e.limit, op=e.op,
                                       note="nothing measured to check this against"))
        for who, entry in targets:
            actual = metric.read(entry)
            rows.append(ExpectationRow(name=f"{e.metric}[{who}] {e.op} {e.limit:g}", passed=e.holds(actual),
                                       actual=actual, limit=e.limit, op=e.op))
    return rows


def render_table(summary: DrillSummary) -> str:
    """The end-of-drill summary as plain text."""
    lines = [f"drill {summary.scenario} with {summary.replicator}: "
             f"{(summary.verdict or ('passed' if summary.passed else 'failed')).upper()} ({summary.duration_s:.0f}s)"]
    if summary.interrupted:
        in_flight = sum(f.in_flight for f in summary.flows)
        lines.append("  interrupted: figures cover what was measured until then"
                     + (f"; {in_flight} record(s) still in flight, not counted lost" if in_flight else ""))
    if summary.error:
        lines.append(f"  error: {summary.error}")
    head = (f"  {'flow':<28}{'acked':>9}{'replicated':>11}{'lost':>7}{'dups':>7}{'reord':>7}{'corrupt':>8}{'unexp':>7}"
            f"{'p50 ms':>8}{'p99 ms':>8}{'stall s':>8}{'rec/s':>9}")
    lines.append(head)
    for f in summary.flows:
        lines.append(f"  {f.name:<28}{f.acked:>9}{f.replicated:>11}{f.lost:>7}{f.duplicates:>7}"
                     f"{f.reordered:>7}{f.corrupted:>8}{f.unexpected:>7}{_n(f.latency_ms.p50):>8}"
                     f"{_n(f.latency_ms.p99):>8}{_n(f.stall_s):>8}{_n(f.throughput_records_s):>9}")
    if summary.failovers:
        lines.append(f"  {'group (strategy, move)':<28}{'skipped':>9}{'reprocessed':>12}{'RTO s':>8}{'RPO recs':>10}")
        for g in summary.failovers:
            who = f"{g.group} ({g.strategy}, {g.primary}->{g.dr})"
            lines.append(f"  {who:<28}{g.skipped:>9}{g.reprocessed:>12}{_n(g.rto_s):>8}{g.rpo_records:>10}")
    if summary.failbacks:
        lines.append(f"  {'failback (copy back)':<28}{'topics':>9}{'records':>12}{'missing':>8}{'extra':>10}{'secs':>8}")
        for b in summary.failbacks:
            lines.append(f"  {b.name + (' converged' if b.converged else ' NOT converged'):<28}{b.topics:>9}"
                         f"{b.records:>12}{_n(b.missing):>8}{_n(b.extra):>10}{_n(b.converge_s):>8}")
            if b.history_records is not None:
                lines.append(f"    history restored: {b.history_records} pre-incident records among them")
            elif b.history_note:
                lines.append(f"    history not restored: {b.history_note}")
    if summary.replicator_starts:
        lines.append("  replicator starts, seconds to the first record moved: " + ", ".join(
            f"{t.get('process', '?')}{' (restart)' if t.get('restart') else ''} {_n(t.get('first_record_s'))} "
            f"(JVM {_n(t.get('jvm_s'))}, Spark session "
            f"{_n(t.get('spark_session_s'))}, query live {_n(t.get('query_live_s'))})" for t in summary.replicator_starts))
    for e in summary.expectations:
        if e.relaxed:
            lines.append(f"  [relaxed] {e.name}: {e.relaxed}")
        elif e.note and e.passed:
            lines.append(f"  [--] {e.name}: {e.note}")
        else:
            lines.append(f"  [{'ok' if e.passed else 'FAIL'}] {e.name} (actual {_n(e.actual)})")
    return "\n".join(lines)


def _n(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.1f}" if v < 1000 else f"{v:.0f}"
    return str(v)
