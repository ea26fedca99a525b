"""The judging phase: the histories checked once, the judges composed into one verdict, the summary built.

Runs after every other phase stopped (the histories are complete then). The judges are the
built-in invariants and the file's expectations (``summary.evaluate``), the baseline comparison
(``run --baseline``) and the timeline's failed steps; ``verdict`` composes them.
"""

from __future__ import annotations

import shlex
import time
import traceback
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from mirrordrill.harness.drill import run_facts
from mirrordrill.harness.drill.baseline import BaselineCheck, BaselineComparison
from mirrordrill.harness.drill.checking import Checked, check_drill
from mirrordrill.harness.drill.context import DrillContext
from mirrordrill.harness.drill.phase_state import Outcome
from mirrordrill.harness.drill.plan import DrillPlan
from mirrordrill.harness.drill.results import DrillResults, DrillSummary, ExpectationRow, LoadWorker, Logs
from mirrordrill.harness.drill.run_folder import CHECK_ERROR_FILE, DRILL_LOG_FILE, HISTORIES_DIR, REPLICATOR_DIR, SCENARIO_COPY
from mirrordrill.harness.drill.summary import evaluate
from mirrordrill.harness.drill.tail_trace import read_traces
from mirrordrill.harness.lab.environment import Environment
from mirrordrill.harness.lab.spark.deployment import SparkDeployment


@dataclass(frozen=True)
class Verdict:
    """Every judge's rows, whether the drill passed, and the baseline comparison (printed and saved)."""

    expectations: list[ExpectationRow]
    passed: bool
    comparison: BaselineComparison | None = None


def failed_steps_rows(step_failures: list[str]) -> list[ExpectationRow]:
    """The failed steps' judge: a fault that could not be injected fails the drill."""
    if not step_failures:
        return []
    return [ExpectationRow(name="every timeline step succeeded", passed=False, actual=len(step_failures), limit=0,
                           op="==", failures=step_failures)]


def verdict(plan: DrillPlan, kind: str, checked: Checked, ctx: DrillContext | None, outcome: Outcome,
            baseline: BaselineCheck | None, check_error: str | None) -> Verdict:
    """All judges composed: invariants and expectations, the baseline, the failed steps; then the verdict."""
    failbacks = list(ctx.failbacks) if ctx else []
    rows = evaluate(plan.scenario, checked.flows, checked.failovers, failbacks, replicator=kind,
                    load=checked.load_facts(ctx.load_started_ms or None if ctx else None),
                    interrupted=outcome.interrupted)
    comparison = baseline.judge(checked.flows, checked.failovers) if baseline is not None else None
    if comparison is not None:
        rows += comparison.expectation_rows()
    rows += failed_steps_rows(outcome.step_failures)
    passed = outcome.clean and check_error is None and all(e.passed for e in rows)
    return Verdict(rows, passed, comparison)


def load_workers(ctx: DrillContext | None) -> list[LoadWorker]:
    """Each worker of each distributed load instance, from its master's final stats."""
    out = []
    for slot in ctx.producers if ctx else []:
        for run in slot.runs:
            stats = run.stats()
            if stats is None:  # the process never wrote its stats
                continue
            for w in stats.workers:
                out.append(LoadWorker(producer=slot.definition.name or "producer", cluster=stats.cluster,
                                      instance=w.instance, index=w.index, worker_id=w.worker_id, host=w.host,
                                      acked=w.acked, sent=w.sent, done=w.done, error=w.error))
    return out


@dataclass(frozen=True)
class RunFacts:
    """What the summary records of how the drill was run, beside what it measured."""

    kind: str
    out_dir: Path
    started: float  # epoch seconds
    spark: SparkDeployment | None  # the pyspark replicator's deployment, as it was asked for
    spark_master: str | None  # run --spark-master
    backend: str  # run --backend
    wan_bytes: dict[str, dict[str, int]]


class Judging:
    """Checks the histories once and builds the results: the summary and the series the plots draw."""

    def __init__(self, plan: DrillPlan, facts: RunFacts, baseline: BaselineCheck | None):
        self.plan, self.facts, self.baseline = plan, facts, baseline
        self.comparison: BaselineComparison | None = None

    def results(self, ctx: DrillContext | None, env: Environment, outcome: Outcome) -> DrillResults:
        checked, check_error = Checked(), None
        out_dir = self.facts.out_dir
        try:
            check_drill(out_dir / HISTORIES_DIR, list(self.plan.check_pairs), ctx.failovers if ctx else [], checked,
                        read_traces(out_dir / REPLICATOR_DIR))
        except Exception as e:
            check_error = f"{type(e).__name__}: {e}"
            (out_dir / CHECK_ERROR_FILE).write_text(traceback.format_exc())
        v = verdict(self.plan, self.facts.kind, checked, ctx, outcome, self.baseline, check_error)
        self.comparison = v.comparison
        return DrillResults(self._summary(ctx, env, outcome, checked, v, check_error), checked.plots, out_dir)

    def _summary(self, ctx: DrillContext | None, env: Environment, outcome: Outcome, checked: Checked,
                 v: Verdict, check_error: str | None) -> DrillSummary:
        s, f = self.plan.scenario, self.facts
        return DrillSummary(
            scenario=s.name, replicator=f.kind, passed=v.passed,
            started_at=datetime.fromtimestamp(f.started, UTC).isoformat(),
            started_ms=int(f.started * 1000), load_started_ms=(ctx.load_started_ms or None) if ctx else None,
            replicator_mode=run_facts.replicator_mode(f.kind, s.replication.mode,
                                                      s.replication.mirrormaker2.exactly_once),
            versions=run_facts.versions(f.kind),
            drill_sha256=run_facts.sha256_of(f.out_dir / SCENARIO_COPY),
            duration_s=round(time.time() - f.started, 1), interrupted=outcome.interrupted,
            error=outcome.error or check_error, flows=checked.flows, failovers=checked.failovers,
            failbacks=list(ctx.failbacks) if ctx else [], expectations=v.expectations, timeline=checked.timeline,
            logs=self._log_paths(ctx, env), rerun=self._rerun_line(),
            backlog_records=sum(b.records for b in s.load.backlog),
            environment=self._environment_facts(env), wan_bytes=dict(f.wan_bytes),
            replicator_starts=[t for r in (ctx.all_replicators() if ctx else []) for t in r.start_times()],
            node_faults=[f for r in (ctx.all_replicators() if ctx else []) for f in r.node_faults()],
            load_workers=load_workers(ctx))

    def _rerun_line(self) -> str:
        f = self.facts
        return (run_facts.rerun_line(f.out_dir, f.kind)
                + (f" --spark-master {shlex.quote(f.spark_master)}" if f.spark_master else "")
                + (f" --backend {f.backend}" if f.backend != "processes" else ""))

    def _environment_facts(self, env: Environment) -> dict:
        """Where brokers and Toxiproxy ran (the backend), the JIT of the brokers it started, and where the
        replicator's Spark ran: the master as asked, the URL it resolved to, executors."""
        backend = {**env.backend.describe(), "startup_s": round(env.startup.total_s, 1) or None,
                   # runs before and after the default became c1 differ by up to a core
                   # (docs/explanations/architecture.md, "The brokers' JIT")
                   "broker_jit": {name: c.spec.broker_jit for name, c in env.clusters.items() if c.spec.existing is None},
                   "clusters": {name: {"security": c.spec.security_facts()} for name, c in env.clusters.items()}}
        d = self.facts.spark
        if d is None:
            return backend
        url = env.spark.url if env is not None and env.spark is not None else None
        return {**backend, "spark_master": d.master + (f" ({url})" if url else ""),
                "spark_executors": d.executors if d.submitted else 0,
                "spark_executor_cores": d.executor_cores if d.submitted else 0}

    def _log_paths(self, ctx: DrillContext | None, env: Environment) -> Logs:
        out_dir = self.facts.out_dir
        logs = Logs(brokers={b.name: str(b.log_path) for c in env.clusters.values() for b in c.brokers},
                    drill=str(out_dir / DRILL_LOG_FILE))
        if env.toxiproxy is not None:
            logs.toxiproxy = str(env.toxiproxy.process.log_path)
        if ctx is not None:
            # a failback adds replicators with the same node names: the folder tells them apart
            logs.replicator = {(k if r.setup.folder == out_dir / REPLICATOR_DIR else f"{k} ({r.setup.folder.name})"): str(v)
                               for r in ctx.all_replicators() for k, v in r.log_paths().items()}
            logs.load = [str(r.log_path) for slot in ctx.producers for r in slot.runs]
        return logs
