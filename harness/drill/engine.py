"""Runs one drill: topology up, replicator, observers, consumers, load, timeline, drain, check.

Every part writes a history; the checker reads only those. Whatever happens (a failed step,
an exception, Ctrl-C), everything started is stopped and the figures measured so far are
checked once and saved through ``harness.drill.results`` (``summary.json`` and the series the plots
draw). The report is not the engine's business: the CLI writes it from those saved results.
"""

from __future__ import annotations

import re
import shlex
import sys
import threading
import time
import traceback
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

from confluent_kafka.admin import NewTopic

from harness.drill import failover, run_facts, run_folder, steps
from harness.drill.baseline import BASELINE_FILE, BaselineCheck, BaselineComparison
from harness.drill.checking import Checked, check_drill
from harness.drill.conditions import unmet_conditions
from harness.drill.context import ConsumerSlot, DrillContext, ProducerSlot, new_app_consumer, now_ms
from harness.drill.drill_log import DRILL_LOG_FILE, DrillLog
from harness.drill.existing_run import refuse_leftovers, remove_drill_names
from harness.drill.load_clock import ProducingSince, load_clock
from harness.drill.replicators import make_replicator
from harness.drill.replicators.setup import ReplicationSetup
from harness.drill.results import DrillResults, DrillSummary, ExpectationRow, Logs, save_results
from harness.drill.schema import Scenario
from harness.drill.stopping import replicator_parts, stop_in_turn
from harness.drill.summary import evaluate, render_table
from harness.drill.topology import check_pairs, flow_specs, link_conditions_of, origin_topics, topology_of
from harness.lab.brokers.existing import refused_writes
from harness.lab.compose.backend import make_backend
from harness.lab.environment import Environment
from harness.lab.spark.deployment import SparkDeployment
from loadgen.app_consumer import StartPosition
from loadgen.backlog import produce_backlog
from loadgen.lag_sampler import LagSampler
from loadgen.observer import Observer
from primitives.bootstrap import Artifacts
from primitives.config_refs import RefResolver


class Drill:
    """One run of one scenario with one replicator."""

    def __init__(self, scenario: Scenario, scenario_path: Path, out_dir: Path, replicator: str | None = None,
                 artifacts: Artifacts | None = None, log: Callable[[str], None] | None = None,
                 progress_interval_s: float = 5.0, baseline: BaselineCheck | None = None,
                 spark_master: str | None = None, backend: str | None = None,
                 backend_project: str | None = None, keep_broker_data: bool = False):
        self.scenario = scenario
        self.keep_broker_data = keep_broker_data  # run --keep-broker-data: the log segments outlive the drill
        self.backend = backend or "processes"  # run --backend: where brokers and Toxiproxy run
        self.backend_project = backend_project  # the docker backend's Compose project (the sweep names it)
        self.baseline = baseline  # ``run --baseline``: regressions against it fail the drill
        self.spark_master = spark_master  # run --spark-master
        self.scenario_path = Path(scenario_path)
        self.out_dir = Path(out_dir).resolve()
        self.kind = replicator or scenario.replication.replicator
        self.artifacts = artifacts
        self.log = log or (lambda m: print(f"mirrordrill: {m}", file=sys.stderr, flush=True))
        self.progress_interval_s = progress_interval_s
        self.phase = "starting"
        self.step_name = ""
        self.comparison: BaselineComparison | None = None
        self._wan_bytes: dict[str, dict[str, int]] = {}  # read just before the environment stops

    # --- the run ----------------------------------------------------------------------
    def run(self) -> DrillResults:
        s = self.scenario
        # a new, empty or earlier run's folder only: anything else is refused before anything starts
        run_folder.take(self.out_dir, "mirrordrill run")
        self._clear_previous_run()
        console = self.log
        drill_log = self.log = DrillLog(self.out_dir / DRILL_LOG_FILE, console)
        try:
            return self._run(s)
        finally:
            drill_log.close()
            self.log = console

    def _run(self, s: Scenario) -> DrillResults:
        histories = self.out_dir / "histories"
        histories.mkdir(exist_ok=True)
        # the exact bytes: summary.json's drill_sha256 is their hash, and the rerun line runs them
        (self.out_dir / run_facts.SCENARIO_COPY).write_bytes(self.scenario_path.read_bytes())
        started = time.time()
        # Secret references in the drill file are read relative to the file's folder.
        if s.existing_clusters():
            refuse_leftovers(s, self.scenario_path.resolve().parent, str(self.scenario_path))
        env = Environment(topology_of(s), self.out_dir / "env", self.artifacts, log=self.log,
                          refs=RefResolver(base_dir=self.scenario_path.parent),
                          backend=make_backend(self.backend, s.name, self.log, self.backend_project),
                          keep_broker_data=self.keep_broker_data,
                          **({"owned_prefix": s.owned_prefix} if s.owned_prefix else {}))
        ctx: DrillContext | None = None
        interrupted, error = False, None
        step_failures: list[str] = []
        progress_stop = threading.Event()
        try:
            self.phase = "starting clusters"
            self.log(f"starting {len(s.clusters)} cluster(s) under {env.workdir}")
            env.start()
            for (a, b), cond in link_conditions_of(s).items():
                env.link(a, b).set(cond)
            for t in s.topics:
                env.cluster(t.cluster).create_topics([NewTopic(t.name, t.partitions, t.replication_factor or 1,
                                                               config={k: str(v) for k, v in t.config.items()})])
            self._produce_backlog(env, histories)
            self.phase = f"starting replicator ({self.kind})"
            new_replicator = self._replicator_factory(env)
            replicator = new_replicator(flow_specs(s), self.out_dir / "replicator")
            ctx = DrillContext(scenario=s, out_dir=self.out_dir, env=env, replicator=replicator,
                               histories=histories, log=self.log, new_replicator=new_replicator,
                               drill_dir=self.scenario_path.resolve().parent)
            if s.stable_address is not None:
                ctx.stable_address = env.add_stable_address(s.stable_address.points_to)
                self.log(f"applications bootstrap through the stable address {ctx.stable_address.bootstrap} "
                         f"(now {s.stable_address.points_to}; failovers re-point it)")
            self.log(f"starting {self.kind} replicator (logs: {', '.join(map(str, replicator.log_paths().values()))})")
            # started before the replicator: its start-up can take minutes on a busy machine
            threading.Thread(target=self._progress, args=(ctx, progress_stop, started), daemon=True).start()
            # held, and ready before the replicator starts: the load begins 0.1 s after the replicator
            # is, without the 2-3 s Locust's start takes, and that start (a second of CPU per load
            # process) no longer shares the cores with the replicator's, which is what a drill times
            start_signal = self._launch_producers(ctx)
            observe_first = bool(s.load.backlog)  # the only records of the load that can move before readiness
            if observe_first:
                self._start_observers(ctx)
            replicator.start()
            if not observe_first:
                self._start_observers(ctx)
            self._start_clients(ctx, start_signal)
            self.phase = "load"
            for step in s.timeline:
                start = steps.wait_for_start(ctx, step)
                if not start.proceed:
                    break
                name = steps.describe(step)
                self.step_name = name
                self.log(f"[{ctx.elapsed():5.1f}s] {name}")
                t = now_ms()
                cond = dict(condition=start.condition, condition_held=start.condition_held,
                            condition_checked_ts_ms=start.condition_checked_ts_ms)
                try:
                    outcome = steps.run_step(ctx, step)
                    ctx.record(name, step.do, t, now_ms(), "ok", outcome, **cond)
                    self.log(f"[{ctx.elapsed():5.0f}s] {name}: {outcome}")
                except Exception as e:  # a failed fault is part of the result, not the end of the drill
                    ctx.record(name, step.do, t, now_ms(), "failed", str(e), **cond)
                    step_failures.append(f"{name}: {e}")
                    self.log(f"[{ctx.elapsed():5.0f}s] {name} FAILED: {e}")
                self.step_name = ""
            while ctx.elapsed() < max(s.duration, ctx.load_until) and not ctx.stop_requested.wait(0.5):
                pass
            self.phase = "draining"
            self._stop_producers(ctx)
            self._drain(ctx)
        except KeyboardInterrupt:
            interrupted = True
            self.log("interrupted: stopping everything and checking what was measured")
        except Exception as e:
            error = f"{type(e).__name__}: {e}"
            (self.out_dir / "error.txt").write_text(traceback.format_exc())
            self.log(f"drill failed: {error} (traceback in {self.out_dir / 'error.txt'})")
        finally:
            progress_stop.set()
            self.phase = "stopping"
            if ctx is not None:
                ctx.stop_requested.set()
            drain = not interrupted and error is None
            parts = [("clients", lambda: self._stop_clients(ctx, drain=drain) if ctx else None),
                     *replicator_parts(ctx.all_replicators() if ctx else []),
                     ("WAN byte counters", lambda: self._wan_bytes.update(env.wan_bytes())),
                     ("environment", lambda: [self.log(p) for p in env.stop()]),
                     ("drill's names on existing clusters", self._remove_drill_names)]
            # each part stops even if another fails or a second Ctrl-C arrives meanwhile: no
            # process may outlive the drill, and summary.json is still written
            interrupted = stop_in_turn(parts, self.log) or interrupted
        refused = refused_writes(env.clusters.values())  # the proxies' guard: defence behind validate
        if refused:  # the root cause of a step or client that failed after it: never hidden by that error
            error = refused if error is None else f"{refused}; then: {error}"
            self.log(f"drill failed: {refused}")
        self.phase = "checking"
        results = self._results(ctx, env, started, interrupted, error, step_failures)
        summary_path = save_results(self.out_dir, results)
        print(render_table(results.summary), flush=True)
        if self.comparison is not None:
            print(self.comparison.table(), flush=True)
            self.log(f"baseline comparison: {self.comparison.save(self.out_dir)}")
        for line in unmet_conditions(results.summary):
            self.log(line)
        self.log(f"summary: {summary_path}")
        return results

    def _remove_drill_names(self) -> None:
        if self.scenario.existing_clusters():
            for problem in remove_drill_names(self.scenario, self.scenario_path.resolve().parent, self.log):
                self.log(f"{problem} (list and remove the rest with 'mirrordrill cleanup {self.scenario_path}')")

    def _clear_previous_run(self) -> None:
        """Reusing an output folder replaces the run in it (only the names a run writes)."""
        run_folder.clear_previous_run(self.out_dir, ("summary.json", "error.txt", "check-error.txt",
                                                     BASELINE_FILE, DRILL_LOG_FILE))

    def _produce_backlog(self, env: Environment, histories: Path) -> None:
        for b in self.scenario.load.backlog:
            self.phase = f"writing a backlog into {b.cluster}/{b.topic}"
            self.log(f"writing a backlog of {b.records:,} records of {b.record_size} B into {b.cluster}/{b.topic}")
            r = produce_backlog(b.cluster, env.cluster(b.cluster).bootstrap, b.topic, b.records, b.record_size,
                                histories, security=env.cluster(b.cluster).security_config())
            self.log(f"backlog written in {r.seconds:.1f}s ({r.records_s:,.0f} records/s)")

    def _replicator_factory(self, env: Environment):
        """Builds replicators of this drill's kind: the drill's own, and a failback's copy back and re-protect."""
        s = self.scenario

        def build(flows, workdir: Path):
            setup = ReplicationSetup(env=env, flows=flows, policy=s.replication.policy,
                                     separator=s.replication.separator, workdir=workdir)
            return make_replicator(self.kind, setup, **self._replicator_options())
        return build

    def spark_deployment(self) -> SparkDeployment:
        """The drill file's replication.spark, with ``run --spark-master`` winning over its master."""
        sp = self.scenario.replication.spark
        return SparkDeployment(master=self.spark_master or sp.master, executors=sp.executors,
                               executor_cores=sp.executor_cores, executor_memory=sp.executor_memory,
                               driver_jit=sp.driver_jit)

    def _replicator_options(self) -> dict:
        r = self.scenario.replication
        opts = {"artifacts": self.artifacts} if self.artifacts is not None else {}
        if self.kind == "pyspark" and r.mode:
            opts["mode"] = r.mode
        if self.kind == "pyspark":
            opts["spark"] = self.spark_deployment()
        if self.kind == "mirrormaker2" and r.mirrormaker2.exactly_once:
            opts["exactly_once"] = True
        if self.kind == "command":
            opts = {"command": r.command, "shell": r.shell, "base_dir": self.scenario_path.resolve().parent}
        return opts

    # --- clients ----------------------------------------------------------------------
    def _launch_producers(self, ctx: DrillContext) -> Path:
        """Start every producer's load process; return once each one waits (held) for the returned file."""
        start_signal = ctx.out_dir / "load" / "start"
        start_signal.unlink(missing_ok=True)  # an output folder used before: hold this run's load too
        for p in self.scenario.load.producers:
            slot = ProducerSlot(p, p.cluster)
            ctx.producers.append(slot)
            failover.start_producer(ctx, slot, slot.cluster, self.scenario.duration, wait=False,
                                    start_signal=start_signal)
        for slot in ctx.producers:  # all started at once: their start-ups overlap one another's
            slot.runner.wait_held()
        return start_signal

    def _start_observers(self, ctx: DrillContext) -> None:
        """Start reading each target; before the replicator starts when a backlog waits: a record's latency is its first sighting.

        Started once the replicator was ready, they dated every record copied before then (a
        backlog, copied while a real-time query warms up) at their own start: failover-strategies'
        1,000-record backlog, on dr 10.4 s after the bundled replicator's start, read 14.2 s after
        it (bench of 2026-11-28), and a capacity sweep's first 90,000-140,000 records read at the
        observer's pace, not the replicator's. They discover the remote topics as they appear.
        Without a backlog nothing of the load moves before the release, and observers reading
        through the replicator's start cost it CPU (forwarding-chain, 2026-11-28: brokers +4 CPU-s
        in its first 22 s, the first record 23-28 s after the start against 19-21 s)."""
        env = ctx.env
        by_target: dict[str, set[str]] = {}
        for p in check_pairs(self.scenario, origin_topics(self.scenario)):
            by_target.setdefault(p.target, set()).update(p.topic_map)
        for target, remotes in sorted(by_target.items()):
            pattern = "^(" + "|".join(re.escape(t) for t in sorted(remotes)) + ")$"
            ctx.observers.append(Observer(target, env.cluster(target).bootstrap, pattern, ctx.histories,
                                          writer_tag=f"observer-{target}",
                                          security=env.cluster(target).security_config()).start())

    def _start_clients(self, ctx: DrillContext, start_signal: Path) -> None:
        """Start the lag samplers and consumers, then release the held producers."""
        s = self.scenario
        env = ctx.env
        pairs = check_pairs(s, origin_topics(s))
        watched: dict[str, set[str]] = {}
        for p in pairs:
            watched.setdefault(p.origin, set()).update(p.topic_map.values())
            watched.setdefault(p.target, set()).update(p.topic_map)
        for cluster, topics in sorted(watched.items()):
            pattern = "^(" + "|".join(re.escape(t) for t in sorted(topics)) + ")$"
            sampler = LagSampler(cluster, env.cluster(cluster).bootstrap, pattern, ctx.histories,
                                 writer_tag=f"sampler-{cluster}", security=env.cluster(cluster).security_config())
            sampler.start()
            ctx.lag_samplers.append(sampler)
        for c in s.load.consumers:
            consumer = new_app_consumer(c, ctx.histories)
            consumer.start(c.cluster, ctx.bootstrap_for(c.cluster), list(c.topics), StartPosition.committed("earliest"),
                           security=ctx.security_for(c.cluster))
            ctx.consumers.append(ConsumerSlot(c, consumer, c.cluster))
        released = time.monotonic()
        start_signal.touch()
        producing = self._wait_producing(ctx.producers)
        clock = load_clock(producing, s.duration, ProducingSince(time.monotonic(), now_ms()))
        ctx.load_started_at, ctx.load_started_ms, ctx.load_until = clock.zero, clock.zero_ms, clock.until_s
        started = ", ".join(f"{slot.definition.name or 'producer'} +{clock.offset_s(p.monotonic):.1f}s"
                            for slot, p in zip(ctx.producers, producing, strict=True))
        self.log(f"load running for {s.duration:g}s; the timeline counts from now, {clock.zero - released:.1f}s "
                 f"after the load was released{f' (producing: {started})' if started else ''}; "
                 f"histories in {ctx.histories}")

    @staticmethod
    def _wait_producing(producers: list[ProducerSlot]) -> list[ProducingSince]:
        """When each producer began producing, watched side by side: waiting for them one after the
        other would date a producer that started while the engine waited for another too late."""
        def wait(slot: ProducerSlot) -> ProducingSince:
            slot.runner.wait_running()  # polls the load's stats file; the process was started by this thread
            return ProducingSince(time.monotonic(), now_ms())
        if not producers:
            return []
        pool = ThreadPoolExecutor(max_workers=len(producers), thread_name_prefix="load-start")
        try:
            return list(pool.map(wait, producers))
        finally:
            # not waiting for the others on Ctrl-C or an error: stopping the drill stops their processes,
            # which ends their waits
            pool.shutdown(wait=False, cancel_futures=True)

    def _stop_producers(self, ctx: DrillContext) -> None:
        for slot in ctx.producers:
            if slot.runner is not None and slot.runner.running:
                slot.runner.stop(timeout_s=30)

    def _drain(self, ctx: DrillContext) -> None:
        """Wait until every measurable flow has zero lag (sources that are down cannot be measured)."""
        deadline = time.monotonic() + self.scenario.drain_timeout
        t = now_ms()
        zero_in_a_row, lag = 0, None
        while time.monotonic() < deadline:
            lag = self._live_lag(ctx)
            zero_in_a_row = zero_in_a_row + 1 if lag == 0 else 0
            if zero_in_a_row >= 3:
                break
            time.sleep(1.0)
        ctx.record("drain", "drain", t, now_ms(), "ok" if zero_in_a_row >= 3 else "timeout", f"lag {lag}")
        self.log(f"drained (lag {lag})" if zero_in_a_row >= 3 else f"drain timed out with lag {lag}")

    def _live_lag(self, ctx: DrillContext) -> int | None:
        """Lag summed over flows that can still deliver: not from a cluster that is down, paused or
        abandoned in an unplanned failover (waiting for those would only run out the timeout)."""
        def alive(cluster: str) -> bool:
            return cluster not in ctx.abandoned and any(b.running and not b.process.paused
                                                        for b in ctx.env.cluster(cluster).brokers)
        # the flows of the replicator running now: a failback replaces the drill's own
        live = [f"{f.source}->{f.target}" for f in ctx.replicator.setup.flows if alive(f.source)]
        if not live:
            return 0
        lags = failover.lag_by_flow(ctx)
        if lags is None or any(lags.get(f) is None for f in live):
            return None
        return sum(lags[f] for f in live)

    def _stop_clients(self, ctx: DrillContext, drain: bool) -> None:
        self._stop_producers(ctx)
        for slot in ctx.consumers:
            try:
                for old in slot.retired:  # died with their cluster: do not wait long for a clean close
                    old.stop(commit=False, timeout_s=5)
                slot.consumer.close()
            except Exception as e:
                self.log(f"stopping consumer {slot.definition.group}: {e}")
        for o in ctx.observers:
            o.stop(drain=drain, timeout_s=60)
        for sampler in ctx.lag_samplers:
            sampler.stop()

    def _progress(self, ctx: DrillContext, stop: threading.Event, started: float) -> None:
        """One status line every few seconds; a failing probe must never end the drill's progress."""
        while not stop.wait(self.progress_interval_s):
            try:
                self.log(self._progress_line(ctx, time.time() - started))
            except Exception as e:  # a probe against a dead cluster, a stats file being replaced
                self.log(f"[{ctx.elapsed():5.0f}s] {self.phase} (progress unavailable: {e})")

    def _progress_line(self, ctx: DrillContext, since_start_s: float) -> str:
        if not ctx.load_started_at:
            return f"[    -] {self.phase} ({since_start_s:.0f}s since the drill started)"
        acked = 0
        for slot in ctx.producers:
            for r in slot.runs:
                st = r.stats()
                acked += st.acked if st is not None else 0
        groups = " ".join(f"{c.definition.group}@{c.cluster}={c.consumer.records}" for c in ctx.consumers)
        lag = self._live_lag(ctx)
        left = max(0.0, max(self.scenario.duration, ctx.load_until) - ctx.elapsed())
        step = f" / {self.step_name}" if self.step_name else ""
        return (f"[{ctx.elapsed():5.0f}s | {left:4.0f}s left] {self.phase}{step} | acked {acked} | "
                f"lag {lag if lag is not None else '?'}" + (f" | processed {groups}" if groups else ""))

    # --- results ----------------------------------------------------------------------
    def _results(self, ctx, env: Environment, started: float, interrupted: bool, error: str | None,
                 step_failures: list[str]) -> DrillResults:
        """Check the histories once: the summary and the series the plots draw come from this one check."""
        s = self.scenario
        failbacks = list(ctx.failbacks) if ctx else []
        checked, check_error = Checked(), None
        try:
            check_drill(self.out_dir / "histories", check_pairs(s, origin_topics(s)), ctx.failovers if ctx else [],
                        checked)
        except Exception as e:
            check_error = f"{type(e).__name__}: {e}"
            (self.out_dir / "check-error.txt").write_text(traceback.format_exc())
        expectations = evaluate(s, checked.flows, checked.failovers, failbacks, replicator=self.kind,
                                load=checked.load_facts(ctx.load_started_ms or None if ctx else None),
                                interrupted=interrupted)
        if self.baseline is not None:
            self.comparison = self.baseline.judge(checked.flows, checked.failovers)
            expectations += self.comparison.expectation_rows()
        if step_failures:
            expectations.append(ExpectationRow(name="every timeline step succeeded", passed=False,
                                               actual=len(step_failures), limit=0, op="==", failures=step_failures))
        passed = (not interrupted and error is None and check_error is None
                  and all(e.passed for e in expectations))
        summary = DrillSummary(
            scenario=s.name, replicator=self.kind, passed=passed,
            started_at=datetime.fromtimestamp(started, UTC).isoformat(),
            started_ms=int(started * 1000), load_started_ms=(ctx.load_started_ms or None) if ctx else None,
            replicator_mode=run_facts.replicator_mode(self.kind, s.replication.mode,
                                                      s.replication.mirrormaker2.exactly_once),
            versions=run_facts.versions(self.kind),
            drill_sha256=run_facts.sha256_of(self.out_dir / run_facts.SCENARIO_COPY),
            duration_s=round(time.time() - started, 1), interrupted=interrupted,
            error=error or check_error, flows=checked.flows, failovers=checked.failovers, failbacks=failbacks,
            expectations=expectations, timeline=checked.timeline, logs=self._log_paths(ctx, env),
            rerun=run_facts.rerun_line(self.out_dir, self.kind)
            + (f" --spark-master {shlex.quote(self.spark_master)}" if self.spark_master else "")
            + (f" --backend {self.backend}" if self.backend != "processes" else ""),
            backlog_records=sum(b.records for b in s.load.backlog),
            environment=self._environment_facts(env), wan_bytes=dict(self._wan_bytes),
            replicator_starts=[t for r in (ctx.all_replicators() if ctx else []) for t in r.start_times()])
        return DrillResults(summary, checked.plots, self.out_dir)

    def _environment_facts(self, env: Environment) -> dict:
        """Where brokers and Toxiproxy ran (the backend), the JIT of the brokers it started, and where the
        replicator's Spark ran: the master as asked, the URL it resolved to, executors."""
        backend = {**env.backend.describe(), "startup_s": round(env.startup.total_s, 1) or None,
                   # runs before and after the default became c1 differ by up to a core (README, "The brokers' JIT")
                   "broker_jit": {name: c.spec.broker_jit for name, c in env.clusters.items() if c.spec.existing is None},
                   "clusters": {name: {"security": c.spec.security_facts()} for name, c in env.clusters.items()}}
        if self.kind != "pyspark":
            return backend
        d = self.spark_deployment()
        url = env.spark.url if env is not None and env.spark is not None else None
        return {**backend, "spark_master": d.master + (f" ({url})" if url else ""),
                "spark_executors": d.executors if d.submitted else 0,
                "spark_executor_cores": d.executor_cores if d.submitted else 0}

    def _log_paths(self, ctx, env: Environment) -> Logs:
        logs = Logs(brokers={b.name: str(b.log_path) for c in env.clusters.values() for b in c.brokers},
                    drill=str(self.out_dir / DRILL_LOG_FILE))
        if env.toxiproxy is not None:
            logs.toxiproxy = str(env.toxiproxy.process.log_path)
        if ctx is not None:
            # a failback adds replicators with the same node names: the folder tells them apart
            logs.replicator = {(k if r.setup.workdir == self.out_dir / "replicator" else f"{k} ({r.setup.workdir.name})"): str(v)
                               for r in ctx.all_replicators() for k, v in r.log_paths().items()}
            logs.load = [str(r.log_path) for slot in ctx.producers for r in slot.runs]
        return logs
