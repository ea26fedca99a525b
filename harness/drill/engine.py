"""Runs one drill: its phases in turn (lab, replication, load, timeline), then judging.

Every part writes a history; the checker reads only those. Whatever happens (a failed step,
an exception, Ctrl-C), the phases started are stopped in reverse order and the figures measured
so far are checked once and saved through ``harness.drill.results`` (``summary.json`` and the
series the plots draw). The report is not the engine's business: the CLI writes it from those
saved results.
"""

from __future__ import annotations

import sys
import time
import traceback
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

from mirrordrill.harness.drill import run_folder
from mirrordrill.harness.drill.baseline import BaselineCheck, BaselineComparison
from mirrordrill.harness.drill.conditions import unmet_conditions
from mirrordrill.harness.drill.drill_log import DrillLog
from mirrordrill.harness.drill.existing_run import RunRefused, refuse_leftovers, remove_drill_names
from mirrordrill.harness.drill.flight_recordings import first_copy_ms, summarize_recordings
from mirrordrill.harness.drill.judging import Judging, RunFacts
from mirrordrill.harness.drill.load_phase import LoadPhase, Progress
from mirrordrill.harness.drill.phase_state import Outcome, Phase, RunStatus
from mirrordrill.harness.drill.phases import LabPhase, ReplicationPhase, ReplicationSite, TimelinePhase
from mirrordrill.harness.drill.plan import DrillPlan, plan_of
from mirrordrill.harness.drill.replicators import RunInputs, make_replicator, replicator_class
from mirrordrill.harness.drill.replicators.setup import ReplicationSetup
from mirrordrill.harness.drill.results import DrillResults, save_results
from mirrordrill.harness.drill.run_folder import DRILL_LOG_FILE, ENV_DIR, ERROR_FILE, HISTORIES_DIR, SCENARIO_COPY
from mirrordrill.harness.drill.schema import Scenario
from mirrordrill.harness.drill.summary import render_table
from mirrordrill.harness.lab.brokers.existing import refused_writes
from mirrordrill.harness.lab.compose.backend import make_backend
from mirrordrill.harness.lab.environment import Environment
from mirrordrill.harness.lab.spark.deployment import SparkDeployment
from mirrordrill.primitives.bootstrap import Artifacts, Bootstrap
from mirrordrill.primitives.config_refs import RefResolver


class Drill:
    """One run of one scenario with one replicator."""

    def __init__(self, scenario: Scenario, scenario_path: Path, out_dir: Path, replicator: str | None = None,
                 artifacts: Artifacts | None = None, log: Callable[[str], None] | None = None,
                 progress_interval_s: float = 5.0, baseline: BaselineCheck | None = None,
                 spark_master: str | None = None, backend: str | None = None,
                 backend_project: str | None = None, keep_broker_data: bool = False,
                 plan: DrillPlan | None = None, flight_recording: bool = False, trace_records: bool = False):
        self.scenario = scenario
        # validation's plan (``CheckedScenario.plan``); a caller holding only the scenario gets it built here
        self.plan = plan if plan is not None else plan_of(scenario)
        self.keep_broker_data = keep_broker_data  # run --keep-broker-data: the log segments outlive the drill
        self.backend = backend or "processes"  # run --backend: where brokers and Toxiproxy run
        self.backend_project = backend_project  # the docker backend's Compose project (the sweep names it)
        self.baseline = baseline  # ``run --baseline``: regressions against it fail the drill
        self.spark_master = spark_master  # run --spark-master
        self.flight_recording = flight_recording  # run --jfr: the replicator's JVMs record flight recordings
        self.trace_records = trace_records  # run --trace: the replicator traces each record's send and ack
        self.scenario_path = Path(scenario_path)
        self.out_dir = Path(out_dir).resolve()
        self.kind = replicator or scenario.replication.replicator
        self.artifacts = artifacts
        self.log = log or (lambda m: print(f"mirrordrill: {m}", file=sys.stderr, flush=True))
        self.progress_interval_s = progress_interval_s
        self.status = RunStatus()
        self.comparison: BaselineComparison | None = None

    # --- the run ----------------------------------------------------------------------
    def run(self) -> DrillResults:
        s = self.scenario
        adapter = replicator_class(self.kind)
        refusal = ((adapter.flight_recording_refusal(self._run_inputs()) if self.flight_recording else None)
                   or (adapter.trace_refusal() if self.trace_records else None))
        if refusal is not None:
            raise RunRefused(refusal)
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
        histories = self.out_dir / HISTORIES_DIR
        histories.mkdir(exist_ok=True)
        # the exact bytes: summary.json's drill_sha256 is their hash, and the rerun line runs them
        (self.out_dir / SCENARIO_COPY).write_bytes(self.scenario_path.read_bytes())
        started = time.time()
        # Secret references in the drill file are read relative to the file's folder.
        if s.existing_clusters():
            refuse_leftovers(s, self.scenario_path.resolve().parent, str(self.scenario_path))
        env = Environment(self.plan.topology, self.out_dir / ENV_DIR, self.artifacts, log=self.log,
                          refs=RefResolver(base_dir=self.scenario_path.parent),
                          backend=make_backend(self.backend, s.name, self.log, self.backend_project),
                          keep_broker_data=self.keep_broker_data,
                          **({"owned_prefix": s.owned_prefix} if s.owned_prefix else {}))
        outcome = Outcome()
        lab = LabPhase(env, self.plan, histories, self.status, self.log, self._remove_drill_names)
        site = ReplicationSite(self.out_dir, histories, self.scenario_path.resolve().parent)
        replication = ReplicationPhase(env, self.plan, self.kind, self._replicator_factory(env), site,
                                       self.status, self.log)
        progress = Progress(self.status, self.log, self.progress_interval_s, started)
        self._run_phases([lab, replication, LoadPhase(replication, self.plan, progress, self.log),
                          TimelinePhase(replication, self.status, outcome, self.log)], outcome)
        if self.flight_recording:  # every replicator JVM has stopped: its recording is written
            java = self.artifacts.java if self.artifacts is not None else Bootstrap().java()
            starts = [t for r in replication.ctx.all_replicators() for t in r.start_times()] if replication.ctx else []
            summarize_recordings(self.out_dir, java, self.log, first_copy_ms(starts))
        refused = refused_writes(env.clusters.values())  # the proxies' guard: defence behind validate
        if refused:  # the root cause of a step or client that failed after it: never hidden by that error
            outcome.error = refused if outcome.error is None else f"{refused}; then: {outcome.error}"
            self.log(f"drill failed: {refused}")
        self.status.phase = "checking"
        spark = self.spark_deployment() if replicator_class(self.kind).uses_spark else None
        facts = RunFacts(self.kind, self.out_dir, started, spark,
                         self.spark_master, self.backend, lab.wan_bytes)
        judging = Judging(self.plan, facts, self.baseline)
        results = judging.results(replication.ctx, env, outcome)
        self.comparison = judging.comparison
        self._report(results)
        return results

    def _run_phases(self, phases: list[Phase], outcome: Outcome) -> None:
        """Start each phase in turn; however that ends, stop the started ones in reverse order.

        Each stop is registered before its start runs: a start that fails half-way is undone too.
        Each part stops even if another fails or a second Ctrl-C arrives meanwhile: no process
        may outlive the drill, and summary.json is still written."""
        with ExitStack() as stack:
            try:
                for phase in phases:
                    stack.callback(phase.stop, outcome)
                    phase.start()
            except KeyboardInterrupt:
                outcome.interrupted = True
                self.log("interrupted: stopping everything and checking what was measured")
            except Exception as e:
                outcome.error = f"{type(e).__name__}: {e}"
                (self.out_dir / ERROR_FILE).write_text(traceback.format_exc())
                self.log(f"drill failed: {outcome.error} (traceback in {self.out_dir / 'error.txt'})")
            self.status.phase = "stopping"

    def _report(self, results: DrillResults) -> None:
        """Save the results, print the table (and the baseline comparison), and say where they are."""
        summary_path = save_results(self.out_dir, results)
        print(render_table(results.summary), flush=True)
        if self.comparison is not None:
            print(self.comparison.table(), flush=True)
            self.log(f"baseline comparison: {self.comparison.save(self.out_dir)}")
        for line in unmet_conditions(results.summary):
            self.log(line)
        for flow in results.summary.flows:
            if flow.tail_trace is not None:
                self.log(flow.tail_trace.line(flow.name))
        self.log(f"summary: {summary_path}")

    def _remove_drill_names(self) -> None:
        if self.scenario.existing_clusters():
            for problem in remove_drill_names(self.scenario, self.scenario_path.resolve().parent, self.log):
                self.log(f"{problem} (list and remove the rest with 'mirrordrill cleanup {self.scenario_path}')")

    def _clear_previous_run(self) -> None:
        """Reusing an output folder replaces the run in it (only the names a run writes)."""
        run_folder.clear_previous_run(self.out_dir)

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

    def _run_inputs(self) -> RunInputs:
        return RunInputs(artifacts=self.artifacts, spark=self.spark_deployment,
                         base_dir=self.scenario_path.resolve().parent, flight_recording=self.flight_recording,
                         trace_records=self.trace_records)

    def _replicator_options(self) -> dict:
        return replicator_class(self.kind).options_for(self.scenario.replication, self._run_inputs())
