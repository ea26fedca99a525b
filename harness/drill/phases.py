"""The phases a drill runs through: lab, replication, load, timeline (judging follows in judging.py).

The engine starts them in this order and stops them in reverse on every exit path (an ExitStack).
Each phase's ``stop`` is registered before its ``start`` runs, so it must stop what a start that
failed half-way got going. Each stop runs its parts through ``stopping.stop_in_turn``: a part that
fails, or a second Ctrl-C, never keeps the rest running. The order of starting things is
docs/drill-files.md §2's: the load is held ready before the replicator starts, observers start
before it when a backlog waits, and the load is released only after the replicator started.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka.admin import NewTopic

from mirrordrill.harness.drill import steps
from mirrordrill.harness.drill.context import DrillContext, now_ms
from mirrordrill.harness.drill.load_phase import live_lag, stop_producers
from mirrordrill.harness.drill.phase_state import Log, Outcome, RunStatus, stop_parts
from mirrordrill.harness.drill.plan import DrillPlan
from mirrordrill.harness.drill.replicators.interface import ReplicatorAdapter
from mirrordrill.harness.drill.replicators.setup import FlowSpec
from mirrordrill.harness.drill.run_folder import REPLICATOR_DIR
from mirrordrill.harness.drill.stopping import replicator_parts
from mirrordrill.harness.lab.environment import Environment
from mirrordrill.loadgen.backlog import produce_backlog

ReplicatorFactory = Callable[[list[FlowSpec], Path], ReplicatorAdapter]


class LabPhase:
    """The clusters, their links' conditions, the declared topics and the backlog."""

    def __init__(self, env: Environment, plan: DrillPlan, histories: Path, status: RunStatus, log: Log,
                 remove_drill_names: Callable[[], None]):
        self.env, self.plan, self.histories, self.status, self.log = env, plan, histories, status, log
        self.remove_drill_names = remove_drill_names
        self.wan_bytes: dict[str, dict[str, int]] = {}  # read just before the environment stops

    def start(self) -> None:
        s, env = self.plan.scenario, self.env
        self.status.phase = "starting clusters"
        self.log(f"starting {len(s.clusters)} cluster(s) under {env.workdir}")
        env.start()
        for (a, b), cond in self.plan.link_conditions.items():
            env.link(a, b).set(cond)
        for t in s.topics:
            env.cluster(t.cluster).create_topics([NewTopic(t.name, t.partitions, t.replication_factor or 1,
                                                           config={k: str(v) for k, v in t.config.items()})])
        self._produce_backlog()

    def _produce_backlog(self) -> None:
        for b in self.plan.scenario.load.backlog:
            self.status.phase = f"writing a backlog into {b.cluster}/{b.topic}"
            self.log(f"writing a backlog of {b.records:,} records of {b.record_size} B into {b.cluster}/{b.topic}")
            cluster = self.env.cluster(b.cluster)
            r = produce_backlog(b.cluster, cluster.bootstrap, b.topic, b.records, b.record_size, self.histories,
                                security=cluster.security_config())
            self.log(f"backlog written in {r.seconds:.1f}s ({r.records_s:,.0f} records/s)")

    def stop(self, outcome: Outcome) -> None:
        stop_parts([("WAN byte counters", lambda: self.wan_bytes.update(self.env.wan_bytes())),
                    ("environment", lambda: [self.log(p) for p in self.env.stop()]),
                    ("drill's names on existing clusters", self.remove_drill_names)], outcome, self.log)


@dataclass(frozen=True)
class ReplicationSite:
    """Where the replication phase builds the drill's context: the run folder and the drill file's folder."""

    out_dir: Path
    histories: Path
    drill_dir: Path


class ReplicationPhase:
    """The drill's replicator, built (the load phase starts it, between holding and releasing the load),
    and the running drill's context, which every later phase reads."""

    def __init__(self, env: Environment, plan: DrillPlan, kind: str, new_replicator: ReplicatorFactory,
                 site: ReplicationSite, status: RunStatus, log: Log):
        self.env, self.plan, self.kind, self.new_replicator = env, plan, kind, new_replicator
        self.site, self.status, self.log = site, status, log
        self.ctx: DrillContext | None = None

    def start(self) -> None:
        s, env = self.plan.scenario, self.env
        self.status.phase = f"starting replicator ({self.kind})"
        replicator = self.new_replicator(list(self.plan.flows), self.site.out_dir / REPLICATOR_DIR)
        stable = env.add_stable_address(s.stable_address.points_to) if s.stable_address is not None else None
        self.ctx = DrillContext(scenario=s, out_dir=self.site.out_dir, env=env, replicator=replicator,
                                histories=self.site.histories, log=self.log, new_replicator=self.new_replicator,
                                drill_dir=self.site.drill_dir, stable_address=stable)
        if stable is not None:
            self.log(f"applications bootstrap through the stable address {stable.bootstrap} "
                     f"(now {stable.points_to}; failovers re-point it)")
        self.log(f"starting {self.kind} replicator (logs: {', '.join(map(str, replicator.log_paths().values()))})")

    def context(self) -> DrillContext:
        if self.ctx is None:
            raise RuntimeError("the replication phase has not started")
        return self.ctx

    def stop(self, outcome: Outcome) -> None:
        # the drill's replicator, then those a failback retired: all of them read at stop time
        stop_parts(replicator_parts(self.ctx.all_replicators() if self.ctx else []), outcome, self.log)


class TimelinePhase:
    """The timeline's steps in order, the load until its end, then the drain."""

    def __init__(self, replication: ReplicationPhase, status: RunStatus, outcome: Outcome, log: Log):
        self.replication, self.status, self.outcome, self.log = replication, status, outcome, log

    def start(self) -> None:
        ctx = self.replication.context()
        s = ctx.scenario
        self.status.phase = "load"
        for step in s.timeline:
            if not self._run_step(ctx, step):
                break
        while ctx.elapsed() < max(s.duration, ctx.load_until) and not ctx.stop_requested.wait(0.5):
            pass
        self.status.phase = "draining"
        stop_producers(ctx)
        self._drain(ctx)

    def _run_step(self, ctx: DrillContext, step) -> bool:
        """Wait for the step's start and run it; False when the drill is being stopped instead."""
        start = steps.wait_for_start(ctx, step)
        if not start.proceed:
            return False
        name = steps.describe(step)
        self.status.step_name = name
        self.log(f"[{ctx.elapsed():5.1f}s] {name}")
        t = now_ms()

        def record(result: str, detail: str) -> None:
            ctx.record(name, step.do, t, now_ms(), result, detail, condition=start.condition,
                       condition_held=start.condition_held, condition_checked_ts_ms=start.condition_checked_ts_ms)
        try:
            outcome = steps.run_step(ctx, step)
            record("ok", outcome)
            self.log(f"[{ctx.elapsed():5.0f}s] {name}: {outcome}")
        except Exception as e:  # a failed fault is part of the result, not the end of the drill
            record("failed", str(e))
            self.outcome.step_failures.append(f"{name}: {e}")
            self.log(f"[{ctx.elapsed():5.0f}s] {name} FAILED: {e}")
        self.status.step_name = ""
        return True

    def _drain(self, ctx: DrillContext) -> None:
        """Wait until every measurable flow has zero lag (sources that are down cannot be measured)."""
        deadline = time.monotonic() + ctx.scenario.drain_timeout
        t = now_ms()
        zero_in_a_row, lag = 0, None
        while time.monotonic() < deadline:
            lag = live_lag(ctx)
            zero_in_a_row = zero_in_a_row + 1 if lag == 0 else 0
            if zero_in_a_row >= 3:
                break
            time.sleep(1.0)
        ctx.record("drain", "drain", t, now_ms(), "ok" if zero_in_a_row >= 3 else "timeout", f"lag {lag}")
        self.log(f"drained (lag {lag})" if zero_in_a_row >= 3 else f"drain timed out with lag {lag}")

    def stop(self, outcome: Outcome) -> None:
        # ends the waits of steps still running in other threads (a failback's watch, a runbook)
        if self.replication.ctx is not None:
            self.replication.ctx.stop_requested.set()
