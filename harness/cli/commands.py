"""The ``mirrordrill`` command line.

Exit codes: 0 the drill ran and every expectation held; 1 an expectation failed (the drill
ran: its summary.json says which); 2 usage (a bad argument or drill file, a missing
install); 3 the harness failed (the drill could not run: an error during set-up, a crash,
the check itself failing; summary.json's ``error`` says what, when it could be written);
130 interrupted (Ctrl-C or SIGTERM; what was measured is saved).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

from mirrordrill.harness.cli.exit_codes import EXIT_CODES_HELP, EXIT_FAILED, EXIT_HARNESS, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE  # noqa: F401

# Re-exported (hence F401): callers import the exit codes from here too, some unused in this module
from mirrordrill.harness.cli.run_options import backend_arg, jfr_arg, profile_option, spark_master_type, trace_arg
from mirrordrill.harness.drill.replicators import replicator_kinds, sweepable_kinds
from mirrordrill.harness.drill.run_folder import OutFolderRefused, take
from mirrordrill.harness.drill.shipped import drill_argument
from mirrordrill.primitives.about import mirrordrill_version
from mirrordrill.primitives.bootstrap import Bootstrap, BootstrapError
from mirrordrill.primitives.measurement_record import Sitting, add_record_option


def drill_exit_code(summary) -> int:
    """A finished drill's exit code: interrupted, then the harness's own failure (``error``: the
    drill could not run or could not be checked), then the expectations. A failed
    expectation (1) is about the replicator; 3 is about mirrordrill or the machine."""
    if summary.interrupted:
        return EXIT_INTERRUPTED
    if summary.error:
        return EXIT_HARNESS
    return EXIT_OK if summary.passed else EXIT_FAILED


class Terminated(KeyboardInterrupt):
    """SIGTERM, handled like Ctrl-C: stop cleanly and keep what was measured."""


def _raise_terminated(signum, frame):
    raise Terminated()


def _console():
    from rich.console import Console
    return Console(stderr=False, highlight=False)


def _default_workdir(kind: str) -> Path:
    return Path(tempfile.gettempdir()) / "mirrordrill" / f"{kind}-{datetime.now():%Y%m%d-%H%M%S}"


# --- setup ------------------------------------------------------------------------------
def cmd_setup(args) -> int:
    """Install (or find) every artifact and print where it is."""
    a = Bootstrap().ensure_all(with_allure=not args.no_allure)
    print(f"java:            {a.java}")
    print(f"kafka jars:      {a.broker_classpath[0].parent} ({len(a.broker_classpath)} jars)")
    print(f"mirrormaker jars:{a.mirrormaker_classpath[0].parent} ({len(a.mirrormaker_classpath)} jars)")
    print(f"mirrormaker 1:   {a.mirrormaker1_classpath[0].parent} ({len(a.mirrormaker1_classpath)} jars)")
    print(f"spark connector: {a.spark_kafka_jars[0].parent} ({len(a.spark_kafka_jars)} jars)")
    print(f"toxiproxy:       {a.toxiproxy_server}")
    print(f"allure:          {a.allure_cli}")
    from mirrordrill.primitives.package_sources import package_sources
    print("downloads came from (each tool's own settings; mirrordrill sets no registry):")
    for source in package_sources():
        print(f"  {source.describe()}")
    return EXIT_OK


# --- doctor -----------------------------------------------------------------------------
def _docker_doctor(args, console) -> bool:
    """The Docker backend's part of doctor: engine, Compose v2, images, each gap with its fix."""
    from mirrordrill.harness.lab.docker.commands import docker_checks
    checks = docker_checks(fix=args.fix)
    for c in checks:
        mark = "[green]ok[/]" if c.ok else "[yellow]missing[/]"
        console.print(f"{mark}  {c.name}: {c.detail}" + (f"  [bold]fix:[/] {c.fix}" if c.fix else ""))
    return all(c.ok for c in checks)


def cmd_doctor(args) -> int:
    from mirrordrill.harness.tools.doctor import Doctor
    console = _console()
    if args.docker:
        # --docker: only the container backend's checks; they decide the exit code.
        return EXIT_OK if _docker_doctor(args, console) else EXIT_FAILED
    if not args.json:
        # The docker backend is optional: its gaps are shown with their fix, not failed on.
        console.print("[bold]docker backend[/] (optional; './mirrordrill doctor --docker' fails on its gaps)")
        _docker_doctor(args, console)
    workdir = Path(args.workdir) if args.workdir else _default_workdir("doctor")

    def progress(check):
        if not args.json:
            mark = "[green]ok[/]" if check.ok else "[red]FAILED[/]"
            console.print(f"{mark}  {check.name} ({check.seconds:.1f}s): {check.detail}")

    report = Doctor(workdir, progress).run()
    if args.json:
        print(json.dumps(report.as_dict(), indent=2))
    else:
        from rich.table import Table
        table = Table(title="versions", show_header=False)
        for k, v in report.versions.items():
            table.add_row(k, v)
        console.print(table)
        if report.startup_s is not None:
            console.print(f"two single-broker clusters + WAN link ready in {report.startup_s:.1f}s")
        console.print("[green]doctor: this machine can run drills[/]" if report.ok
                      else f"[red]doctor: some checks failed[/] (logs under {workdir})")
    return EXIT_OK if report.ok else EXIT_FAILED


def cmd_images(args) -> int:
    from mirrordrill.harness.lab.docker.commands import images_build
    return images_build(args.only)


# --- up ---------------------------------------------------------------------------------
def cmd_up(args) -> int:
    """Start a topology and keep it running until Ctrl-C."""
    from mirrordrill.harness.lab.environment import Environment
    from mirrordrill.harness.tools.up import up_topology
    try:
        spec, refs = up_topology(args.file, args.clusters, args.brokers)
    except ValueError as e:
        print(f"mirrordrill up: {e}", file=sys.stderr)
        return EXIT_USAGE
    workdir = Path(args.workdir) if args.workdir else _default_workdir("up")
    from mirrordrill.harness.lab.compose.backend import make_backend
    def log(m: str) -> None:
        print(f"mirrordrill: {m}", file=sys.stderr)

    with Environment(spec, workdir, log=log, refs=refs, backend=make_backend(args.backend, "up", log),
                     keep_broker_data=True) as env:  # the user's own lab: its data stays in --workdir
        manifest = env.manifest()
        (workdir / "manifest.json").write_text(json.dumps(manifest, indent=2))
        if args.connection_file:
            from mirrordrill.harness.tools.connection_file import write_connection_file
            print(f"connection file: {write_connection_file(env, Path(args.connection_file))}")
        print(f"ready in {env.startup.total_s:.1f}s; manifest: {workdir / 'manifest.json'}")
        for name, c in manifest["clusters"].items():
            print(f"  {name}: bootstrap {c['bootstrap']}")
            for remote, addr in c["wan_bootstrap"].items():
                print(f"      from {remote} (through the WAN link): {addr}")
            for b in c["brokers"]:
                print(f"      broker {b['node_id']} log: {b['log']}")
        print(f"  toxiproxy API: {manifest['toxiproxy']['api']} (log {manifest['toxiproxy']['log']})")
        if manifest["environment"].get("compose_file"):
            print(f"  containers: Compose project {manifest['environment']['compose_project']}, "
                  f"file {manifest['environment']['compose_file']}")
        print("Ctrl-C stops everything.")
        while True:
            dead = [p.name for p in env.supervisor.processes if not p.running and not p.paused]
            if dead:
                print(f"mirrordrill up: {', '.join(dead)} exited; stopping", file=sys.stderr)
                return EXIT_FAILED
            time.sleep(1)


# --- validate / run ----------------------------------------------------------------------
def run_drill(scenario, scenario_path: Path, out: Path, replicator: str | None = None, artifacts=None,
              log=None, baseline=None, spark_master: str | None = None, backend: str | None = None,
              keep_broker_data: bool = False, plan=None, flight_recording: bool = False, trace_records: bool = False):
    """Run a drill, then write its Allure results from what it saved: what ``mirrordrill run`` does,
    and what tests that need a drill's report call (``plan``: validation's, when the caller has it).
    Returns the drill's ``harness.drill.results.DrillResults``."""
    from mirrordrill.harness.drill.engine import Drill
    from mirrordrill.reports.allure_results import record_allure_results
    log = log or (lambda m: print(f"mirrordrill: {m}", file=sys.stderr, flush=True))
    results = Drill(scenario, Path(scenario_path), out, replicator=replicator, artifacts=artifacts, log=log,
                    baseline=baseline, spark_master=spark_master, backend=backend,
                    keep_broker_data=keep_broker_data, plan=plan, flight_recording=flight_recording,
                    trace_records=trace_records).run()
    if results.run_dir is not None:  # a drill's results carry the folder they were saved in
        record_allure_results(results.run_dir, log)
    return results


def cmd_run(args) -> int:
    """Run one drill; exit 0 only when it ran and every expectation held."""
    from mirrordrill.harness.drill.validate import ScenarioInvalid, check_file
    try:
        # checked for the replicator that will run: --replicator may differ from the file's own
        checked = check_file(Path(args.file), args.replicator, args.profile, spark_master=args.spark_master)
    except ScenarioInvalid as e:
        print(str(e), file=sys.stderr)
        return EXIT_USAGE
    for warning in checked.warnings:
        print(str(warning), file=sys.stderr)
    scenario = checked.scenario
    from mirrordrill.harness.drill.existing_run import RunRefused
    from mirrordrill.harness.tools.existing.commands import refuse_existing
    refusal = refuse_existing(scenario, args.allow_cluster)
    if refusal:
        print(f"mirrordrill run: {refusal}", file=sys.stderr)
        return EXIT_USAGE
    baseline = None
    if args.baseline:
        from mirrordrill.harness.drill.baseline import BaselineCheck, BaselineError
        try:
            baseline = BaselineCheck.prepare(Path(args.baseline), args.tolerance, scenario.name,
                                             args.replicator or scenario.replication.replicator, Path(args.file))
        except BaselineError as e:
            print(f"mirrordrill run: {e}", file=sys.stderr)
            return EXIT_USAGE
        for note in baseline.warnings:
            print(f"mirrordrill run: baseline: {note}", file=sys.stderr)
    elif args.tolerance:
        print("mirrordrill run: --tolerance applies to a comparison with --baseline DIR; give the baseline run",
              file=sys.stderr)
        return EXIT_USAGE
    replicator = args.replicator or scenario.replication.replicator
    out = Path(args.out) if args.out else Path("runs") / f"{scenario.name}-{replicator}-{datetime.now():%Y%m%d-%H%M%S}"
    try:
        result = run_drill(scenario, Path(args.file), out, replicator=args.replicator, baseline=baseline,
                           spark_master=args.spark_master, backend=args.backend, keep_broker_data=args.keep_broker_data,
                           flight_recording=args.jfr, trace_records=args.trace,
                           plan=checked.plan)
    except KeyboardInterrupt:
        raise
    except (RunRefused, OutFolderRefused) as e:  # an existing cluster unreachable or not clean, a foreign
        print(f"mirrordrill run: {e}", file=sys.stderr)  # --out folder (the engine's first act): nothing started
        return EXIT_USAGE
    except Exception as e:  # the engine saves what it can; this is a crash around it
        import traceback
        traceback.print_exc()
        print(f"mirrordrill run: the harness failed: {type(e).__name__}: {e} (exit {EXIT_HARNESS})", file=sys.stderr)
        return EXIT_HARNESS
    if args.report:
        from mirrordrill.reports.render import ReportError, render
        try:
            rendered = render([out], take(out / "report", "mirrordrill report"))
            print(f"report: {rendered.html} (history: {rendered.history})")
        except (ReportError, ValueError) as e:  # ValueError: OutFolderRefused
            print(f"mirrordrill run: the drill ran, but its report could not be rendered: {e}", file=sys.stderr)
    return drill_exit_code(result.summary)


def cmd_test(args) -> int:
    """The test suite lives in a checkout, not in the installed package: say how to run it."""
    print("mirrordrill test: the test suite runs from a checkout of mirrordrill: './mirrordrill test "
          "[pytest args]' (the wrapper script at the checkout's root), or 'python -m pytest tests' in "
          "that checkout with mirrordrill[test] installed.", file=sys.stderr)
    return EXIT_USAGE


def cmd_replicate(args) -> int:
    """Run the bundled replicator standalone until SIGTERM or Ctrl-C."""
    from mirrordrill.replicator.__main__ import main as replicator_main

    def installed_jars() -> list[Path]:
        # The replicator itself knows no installation; this one is mirrordrill's.
        b = Bootstrap()
        return [*b.jvm_classpath("spark-kafka"), b.replicator_jar()]

    argv = ["--config", args.config, "--workdir", args.workdir, "--log-level", args.log_level]
    if args.jars:
        argv += ["--jars", args.jars]
    return replicator_main(argv, default_jars=installed_jars)


# --- report / sweep -----------------------------------------------------------------------
def cmd_report(args) -> int:
    """Render one single-file HTML report (Allure 3) from run folders, extending their history."""
    from mirrordrill.reports.render import ReportError, render
    given = [Path(d) for d in args.dirs]
    # a sweep folder stands for its points (each a drill run)
    runs = [r for d in given for r in (sorted(p.parent for p in d.glob("points/*/summary.json"))
                                       if not (d / "summary.json").exists() and (d / "sweep.jsonl").exists() else [d])]
    out = Path(args.out) if args.out else (given[0] / "report" if len(given) == 1 else Path("runs") / "report")
    try:
        rendered = render(runs, take(out, "mirrordrill report"), history=Path(args.history) if args.history else None,
                          name=args.name)
    except (ReportError, OutFolderRefused) as e:  # no readable results, or a foreign --out (Allure replaces what
        print(f"mirrordrill report: {e}", file=sys.stderr)  # its folder holds), is bad input; Allure failing is ours
        return EXIT_USAGE if getattr(e, "bad_input", True) else EXIT_HARNESS
    print(f"report: {rendered.html}")
    print(f"history: {rendered.history}")
    return EXIT_OK


def cmd_sweep(args) -> int:
    """Run a drill once per parameter combination and size the flow from the results."""
    from mirrordrill.harness.drill.validate import ScenarioInvalid, load_scenario
    from mirrordrill.harness.tools.existing.commands import refuse_existing
    from mirrordrill.harness.tools.sweep.params import SweepError, parse_params
    from mirrordrill.harness.tools.sweep.run import Sweep
    from mirrordrill.reports.sweep_hooks import SweepReports
    sitting = Sitting.begin(["mirrordrill"])
    try:
        # every point is a run on the same clusters: the same allow-list as run's, before any point starts
        refusal = refuse_existing(load_scenario(Path(args.file)), args.allow_cluster)
        if refusal:
            print(f"mirrordrill sweep: {refusal}", file=sys.stderr)
            return EXIT_USAGE
        params = parse_params(args.param)
        sweep = Sweep(Path(args.file), params, Path(args.out) if args.out else None,
                      measure_ceiling=not args.no_ceiling, repeat=args.repeat, reports=SweepReports(),
                      backend=args.backend, spark_master=args.spark_master, flight_recording=args.jfr)
        result = sweep.run()
    except (SweepError, ScenarioInvalid) as e:
        print(f"mirrordrill sweep: {e}", file=sys.stderr)
        return EXIT_USAGE
    print(result.table())
    print(result.recommendation())
    print(f"sweep folder: {result.out_dir} (points in {result.out_dir / 'sweep.jsonl'}, plot {result.plot})")
    if args.record:
        print(f"record: {sitting.write('sweep', result.to_json(), args.record)}")
    if args.report:
        from mirrordrill.reports.render import ReportError, render
        try:
            print(f"report: {render(result.run_dirs, take(result.out_dir / 'report', 'mirrordrill report')).html}")
        except (ReportError, ValueError) as e:  # ValueError: OutFolderRefused
            print(f"mirrordrill sweep: report not rendered: {e}", file=sys.stderr)
    return EXIT_OK if result.points else EXIT_FAILED


def cmd_calibrate(args) -> int:
    """Run a drill N times; print each figure's range and the expectations to paste, with their margin."""
    from mirrordrill.harness.drill.validate import ScenarioInvalid, check_file
    from mirrordrill.harness.tools.calibrate.limits import CalibrationError, parse_margin
    from mirrordrill.harness.tools.calibrate.run import calibrate
    from mirrordrill.harness.tools.sweep.params import SweepError
    from mirrordrill.reports.sweep_hooks import CalibrationReports
    sitting = Sitting.begin(["mirrordrill"])
    try:
        margin = parse_margin(args.margin)
        check_file(Path(args.file), args.replicator, args.profile, spark_master=args.spark_master)
        run = calibrate(Path(args.file), args.runs, margin, args.replicator, Path(args.out) if args.out else None,
                        reports=CalibrationReports(), profile=args.profile, spark_master=args.spark_master,
                        record=sitting.path_for("calibrate", args.record) if args.record else None)
    except (CalibrationError, ScenarioInvalid, SweepError) as e:
        print(f"mirrordrill calibrate: {e}", file=sys.stderr)
        return EXIT_USAGE
    c = run.calibration
    print(f"{len(run.used)} run(s) measured in {run.out_dir}; per metric, each run, the range, and the limit "
          f"suggested with a {c.margin:.0%} margin:")
    print(c.range_table())
    for line in run.left_out:
        print(f"left out (no figures): {line}")
    for line in run.failed_now:
        print(f"note: failed the file's current expectations, figures used anyway: {line}")
    print(f"\n# paste into {args.file} (also saved in {run.out_dir / 'calibration.yaml'}):")
    print(c.expectations_yaml(), end="")
    if args.record:
        print(f"record: {sitting.write('calibrate', c.to_json(), args.record)}")
    return EXIT_OK


def cmd_bench(args) -> int:
    """Every drill (or --drills) for pyspark and MirrorMaker 2, interleaved, N runs each; the medians side by side."""
    from mirrordrill.reports.sweep_hooks import CalibrationReports
    if args.what in ("startup", "load"):
        from mirrordrill.harness.cli import bench as bench_cli
        return bench_cli.cmd_bench_startup(args) if args.what == "startup" else bench_cli.cmd_bench_load(args)
    from mirrordrill.harness.drill.validate import ScenarioInvalid
    from mirrordrill.harness.tools.bench.drills import REPLICATORS, BenchError, bench
    from mirrordrill.harness.tools.sweep.params import SweepError
    sitting = Sitting.begin(["mirrordrill"])
    files = [Path(f) for f in args.drills] if args.drills else sorted(Path("scenarios").glob("*.yaml"))
    try:
        if not args.drills:  # every shipped drill both replicators can run (a sweep or a Spark-only drill is left out)
            files = [f for f in files if _runs_with(f, REPLICATORS)]
        result = bench(files, args.runs, Path(args.out) if args.out else None, reports=CalibrationReports(
            lambda m: print(f"mirrordrill bench: {m}", file=sys.stderr, flush=True)))
    except (BenchError, ScenarioInvalid, SweepError) as e:
        print(f"mirrordrill bench: {e}", file=sys.stderr)
        return EXIT_USAGE
    js, md = result.save()
    print(result.markdown())
    print(f"\nsaved: {md} and {js}; the runs are in {result.out_dir}")
    if args.record:
        print(f"record: {sitting.write('bench-drills', result.to_json(), args.record)}")
    return EXIT_OK


def _runs_with(drill: Path, replicators: tuple[str, ...]) -> bool:
    from mirrordrill.harness.drill.validate import ScenarioInvalid, check_file
    try:
        for kind in replicators:
            check_file(drill, kind)
    except ScenarioInvalid as e:
        print(f"mirrordrill bench: leaving out {drill}: {str(e).splitlines()[0]}", file=sys.stderr)
        return False
    import yaml
    spec = yaml.safe_load(drill.read_text()) or {}
    if "sweep" in drill.stem or (spec.get("replication") or {}).get("spark"):
        print(f"mirrordrill bench: leaving out {drill}: a capacity sweep's drill or a Spark-cluster drill",
              file=sys.stderr)
        return False
    return True


def _machine_parsers(sub: argparse._SubParsersAction) -> None:
    """The subcommands setup, doctor and images: this machine's tools, checks and container images."""
    s = sub.add_parser("setup", help="install (once) Kafka, MirrorMaker 2, the Spark connector, Toxiproxy, Allure")
    s.add_argument("--no-allure", action="store_true", help="skip Allure (npm)")
    s.set_defaults(func=cmd_setup)

    s = sub.add_parser("doctor", help="check that this machine can run drills, end to end")
    s.add_argument("--json", action="store_true", help="machine-readable report on stdout")
    s.add_argument("--workdir", help="where broker and proxy logs go (default: a new folder under /tmp/mirrordrill)")
    s.add_argument("--docker", action="store_true", help="only the docker backend: engine, Compose v2, images")
    s.add_argument("--fix", action="store_true", help="install/start the Docker engine (root + apt), build Compose "
                   "v2 and the images, then check")
    s.set_defaults(func=cmd_doctor)

    s = sub.add_parser("images", help="container images of the docker backend: 'images build [--only NAME]'")
    s.add_argument("action", choices=["build"])
    s.add_argument("--only", action="append", metavar="NAME",
                   help="base, python, broker, toxiproxy, spark or loadgen (with its parents); repeatable")
    s.set_defaults(func=cmd_images)

def _drill_parsers(sub: argparse._SubParsersAction) -> None:
    """The subcommands run, replicate and report: a drill, the replicator on its own, a run's report."""
    s = sub.add_parser("run", help="run a drill file: topology, replicator, load, faults, failover, checks",
                       epilog=EXIT_CODES_HELP)
    s.add_argument("file", type=drill_argument, help="a drill file, or a shipped drill's name (mirrordrill drills)")
    s.add_argument("--replicator", choices=replicator_kinds(),
                   help="the replicator under test (default: the file's replication.replicator)")
    s.add_argument("--out", help="output folder (default: runs/<scenario>-<replicator>-<time>)")
    s.add_argument("--spark-master", type=spark_master_type, metavar="MASTER",
                   help="where the pyspark replicator's Spark runs, over the file's replication.spark.master: "
                        "local (default), standalone (a master and two workers started for the drill), "
                        "spark://HOST:PORT; yarn and k8s:// are passed to spark-submit, untested here")
    s.add_argument("--report", action="store_true", help="also render the single-file HTML report into OUT/report/index.html")
    s.add_argument("--keep-broker-data", action="store_true", help="keep the brokers' log segments in OUT/env "
                   "(deleted when the drill ends otherwise; the broker logs always stay)")
    jfr_arg(s)
    trace_arg(s)
    backend_arg(s)
    s.add_argument("--baseline", metavar="DIR", help="a previous run's folder (or its summary.json): fail (exit 1) "
                   "on a regression beyond the tolerances even where the file's limits hold; the comparison is "
                   "printed and saved as OUT/baseline.json")
    profile_option(s)
    s.add_argument("--tolerance", action="append", metavar="KEY=PCT%[+SLACK]",
                   help="how much worse than the baseline passes; KEY: latency (p50/p90/p99, default 50%%+250 ms), "
                        "rto (50%%+2 s), reprocessed (20%%+10 records), throughput (20%% less); repeatable")
    s.add_argument("--allow-cluster", action="append", metavar="NAME",
                   help="an existing cluster of the drill that this run may touch (repeatable; required for each)")
    s.set_defaults(func=cmd_run)

    s = sub.add_parser("replicate", help="run the bundled PySpark replicator on its own (MM2 properties or YAML)")
    s.add_argument("--config", required=True, help="MirrorMaker 2 properties file or mirrordrill replicator YAML")
    s.add_argument("--workdir", default="mirrordrill-replicator",
                   help="checkpoints, metrics.json and Spark scratch space (default: ./mirrordrill-replicator)")
    s.add_argument("--jars", help="comma-separated jars for Spark (default: $MIRRORDRILL_REPLICATOR_JARS, the "
                   "configuration's mirrordrill.spark.jars, else the ones mirrordrill installed)")
    s.add_argument("--log-level", default="INFO")
    s.set_defaults(func=cmd_replicate)

    s = sub.add_parser("report", help="render run folders as one single-file HTML report (Allure 3) with history")
    s.add_argument("dirs", nargs="+", metavar="DIR", help="output folders of 'mirrordrill run'")
    s.add_argument("--out", help="report folder (default: DIR/report for one run, runs/report for several)")
    s.add_argument("--history", help="Allure history JSONL (default: .allure-history.jsonl beside the run folders)")
    s.add_argument("--name", help="report title (default: the scenarios and replicators)")
    s.set_defaults(func=cmd_report)

def _measuring_parsers(sub: argparse._SubParsersAction) -> None:
    """The subcommands sweep, calibrate and bench: many drills, measured."""
    s = sub.add_parser("sweep", help="run a drill per parameter combination; throughput, latency, CPU, the knee")
    s.add_argument("file", type=drill_argument,
                   help="a drill file (or a shipped drill's name); each point runs it with the parameters applied")
    s.add_argument("--param", action="append", required=True, metavar="KEY=V1,V2,...",
                   help="num_streams (tasks.max; MirrorMaker 1's --num.streams), linger.ms (producer.linger.ms), "
                        "compression (producer.compression.type), replicator, policy, mode, rate, backlog, the WAN's "
                        "latency_ms and "
                        "bandwidth_kb_s (every link), or any flow setting; repeat for a grid")
    s.add_argument("--out", help="sweep folder (default: runs/sweep-<scenario>-<time>)")
    s.add_argument("--no-ceiling", action="store_true", help="skip the machine-ceiling measurement")
    s.add_argument("--repeat", type=int, default=1, metavar="N",
                   help="run every combination N times; the knee and the plot use each one's median run")
    s.add_argument("--report", action="store_true", help="also render the HTML report of every point")
    s.add_argument("--spark-master", type=spark_master_type, metavar="MASTER",
                   help="where every point's pyspark replicator runs, over the file's replication.spark.master "
                        "(as for run: local, standalone, spark://HOST:PORT)")
    s.add_argument("--allow-cluster", action="append", metavar="NAME",
                   help="an existing cluster of the drill that the points may touch (repeatable; required for each)")
    add_record_option(s)
    backend_arg(s)
    jfr_arg(s)
    s.set_defaults(func=cmd_sweep)

    s = sub.add_parser("calibrate", help="run a drill N times; print each figure's range and suggested expectations")
    s.add_argument("file", type=drill_argument, help="a drill file, or a shipped drill's name (mirrordrill drills)")
    s.add_argument("--runs", type=int, default=3, metavar="N", help="how many runs (default 3)")
    s.add_argument("--replicator", choices=sweepable_kinds(),
                   help="the replicator under test (default: the file's replication.replicator)")
    s.add_argument("--margin", default="50%", help="limits this far beyond the worst run (default 50%%; 0.5 works too)")
    s.add_argument("--out", help="calibration folder (default: runs/calibrate-<drill>-<replicator>-<time>); "
                   "the same folder again resumes an interrupted calibration")
    s.add_argument("--spark-master", type=spark_master_type, metavar="MASTER",
                   help="where the pyspark replicator's Spark runs in every run, over the file's replication.spark.master "
                        "(as for run); paste the limits under the file's spark_masters section for that kind of master")
    profile_option(s)
    add_record_option(s)
    s.set_defaults(func=cmd_calibrate)

    s = sub.add_parser("bench", help="drills: pyspark and MirrorMaker 2 interleaved; startup: each drill's lab on "
                       "both backends alternately, medians side by side; load: one load process's highest rate")
    s.add_argument("what", choices=["drills", "startup", "load"], help="what to benchmark: drills, startup or load")
    s.add_argument("--drills", nargs="+", metavar="FILE", type=drill_argument,
                   help="drill files (default: every scenarios/*.yaml "
                   "both replicators can run, the capacity sweep's drill left out)")
    s.add_argument("--runs", type=int, default=3, metavar="N", help="runs per drill and replicator (default 3)")
    s.add_argument("--out", help="bench folder (default: runs/bench-<time>); the same folder again resumes")
    add_record_option(s)
    from mirrordrill.harness.cli.bench import add_load_options
    add_load_options(s)
    s.set_defaults(func=cmd_bench)

def _file_parsers(sub: argparse._SubParsersAction) -> None:
    """The subcommand up: a drill file's clusters started to try things by hand."""
    s = sub.add_parser("up", help="start clusters and WAN links, print how to connect, run until Ctrl-C")
    s.add_argument("file", nargs="?", type=drill_argument,
                   help="a drill file (or a shipped drill's name): start its clusters (with their security) and links")
    s.add_argument("--clusters", help="comma-separated cluster names, without a drill file (default: primary,dr)")
    s.add_argument("--connection-file", metavar="PATH",
                   help="write each cluster's bootstrap servers and client settings here (secrets by reference)")
    s.add_argument("--brokers", type=int, default=1, help="brokers per cluster (default: 1)")
    s.add_argument("--workdir", help="where data and logs go (default: a new folder under /tmp/mirrordrill)")
    backend_arg(s)
    s.set_defaults(func=cmd_up)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="mirrordrill", description="The mirrordrill command line. Chaos and failover "
                                "drills for Kafka cross-cluster replication.", epilog=EXIT_CODES_HELP)
    p.add_argument("--version", action="version", version=f"mirrordrill {mirrordrill_version()}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    _machine_parsers(sub)
    _drill_parsers(sub)
    _measuring_parsers(sub)
    _file_parsers(sub)
    from mirrordrill.harness.cli.drill_files import add_parsers as add_drill_file_parsers
    add_drill_file_parsers(sub, profile_option)

    from mirrordrill.harness.tools.existing.commands import add_parsers
    add_parsers(sub)
    from mirrordrill.harness.tools.drill_schema import add_parsers as add_schema_parser
    add_schema_parser(sub)
    from mirrordrill.harness.cli.docs import add_parsers as add_docs_parser
    from mirrordrill.harness.tools.init import add_parsers as add_init_parser
    add_init_parser(sub)
    add_docs_parser(sub)
    from mirrordrill.harness.cli.load_worker import add_parsers as add_load_worker_parser
    add_load_worker_parser(sub)

    s = sub.add_parser("test", help="run the test suite (pytest); from a checkout: ./mirrordrill test [pytest args]")
    s.set_defaults(func=cmd_test)
    return p


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["test"]:  # pytest's own options ('-q', '-k') are not this parser's to judge
        return cmd_test(None)
    args = build_parser().parse_args(argv)
    signal.signal(signal.SIGTERM, _raise_terminated)
    # A shell starts background jobs with SIGINT ignored; `kill -INT` (what CI runners send)
    # must still stop a drill the way Ctrl-C does.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        return args.func(args)
    except BootstrapError as e:
        print(f"mirrordrill: {e}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("mirrordrill: interrupted; everything it started has been stopped", file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
