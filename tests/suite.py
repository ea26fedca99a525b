"""The whole suite in three parts: what may share the cores, in parallel; the drills, two at a time;
then what must run alone.

``./mirrordrill test`` with no arguments runs this. Most tests wait on something (a JVM starting,
a broker electing, a poll): three of them side by side on pytest-xdist's workers fill the machine's
two cores instead of one. Drills assert on figures calibrated on a quiet machine, so no other test
runs beside them; a light drill keeps about half a core busy, and two of them side by side give
the figures each gives alone (tests/drills/conftest.py), so they run in pairs. The tests marked
``serial`` (a heavy drill's, and "within 1.5 s" of an event) run last, one at a time, with nothing
beside them. All parts write into one Allure results folder, so the run's report covers all of it;
the exit status is the worst of them.

With arguments (``./mirrordrill test tests/unit -k foo``) the wrapper runs pytest itself, once,
in one process: a person choosing tests chooses how they run.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

# Three workers on two cores: the tests mostly wait (a JVM starting, a broker electing, a poll), and
# two left the cores partly idle (docs/measurements/suite-runs-*.json, cpu_busy); each worker has
# its own session-scoped clusters and Spark.
WORKERS = os.environ.get("MIRRORDRILL_TEST_WORKERS", "3")
ALONE = "drill or serial"
DRILL_PAIRS = "1" if WORKERS == "1" else "2"  # two drills side by side: their figures were measured so, not more
RESULTS = "test-results/allure-results"
ROOT = Path(__file__).resolve().parents[1]


def parts(extra: list[str]) -> list[tuple[str, list[str]]]:
    """Each part's name and pytest arguments."""
    return [
        (f"in parallel on {WORKERS} workers",
         ["-n", WORKERS, "--dist", "loadscope", "--no-loadscope-reorder", "-m", f"not ({ALONE})",
          "--no-report-render", *extra]),
        # The same results folder, not cleaned: the report the last part renders holds every part.
        # One drill at a time to each worker, in collection order (longest first: tests/drills/conftest.py)
        ("two drills at a time", ["-n", DRILL_PAIRS, "--dist", "load", "--maxschedchunk", "1", "-m", "drill and not serial",
                                  "--alluredir", RESULTS, "--no-report-render", *extra]),
        ("alone, one at a time", ["-m", "serial", "--alluredir", RESULTS, *extra]),
    ]


def main(argv: list[str]) -> int:
    # Ctrl-C reaches pytest too (one process group): pytest stops its tests and processes and
    # exits 2; this process only waits for it. A handler of our own, unlike SIG_IGN, is not
    # inherited through exec, so pytest still gets Python's KeyboardInterrupt.
    signal.signal(signal.SIGINT, lambda signum, frame: None)
    worst = 0
    chosen = parts(argv)
    for k, (name, args) in enumerate(chosen):
        print(f"mirrordrill test: the tests that run {name}", file=sys.stderr, flush=True)
        status = subprocess.call([sys.executable, "-m", "pytest", *args])
        # 5 is pytest's "no tests collected": a part can be empty when a person's -k selects none.
        if status not in (0, 5):
            worst = max(worst, status)
        if status == 2:  # interrupted (Ctrl-C): the person asked to stop, not to go on to the next part
            if k < len(chosen) - 1:
                render_what_ran()
            break
    return worst


def render_what_ran() -> None:
    """The report of the parts that ran, when the part that renders it (the last) did not run."""
    from mirrordrill.reports.pytest_run_report import render_run_report
    results = ROOT / RESULTS
    if any(results.glob("*-result.json")):
        print(render_run_report(ROOT, results)[0], file=sys.stderr, flush=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
