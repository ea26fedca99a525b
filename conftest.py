"""The test suite's command-line options.

They live at the repository root so that pytest knows them before it collects anything,
whatever paths it is given: ``./mirrordrill test --drills scenarios/`` and
``--drill-replicator mirrormaker2`` work from the checkout's root as the README writes them.
"""

from __future__ import annotations

from mirrordrill.harness.drill.replicators import replicator_kinds


def pytest_addoption(parser):
    group = parser.getgroup("mirrordrill")
    group.addoption("--drills", action="store", nargs="?", const="scenarios", default=None, metavar="DIR",
                    help="also run every drill file in DIR (default: scenarios/) as a test")
    group.addoption("--drill-replicator", default=None, choices=replicator_kinds(),
                    help="run drills with this replicator instead of the one each file names")
    group.addoption("--profile", default="short", choices=["full", "short"],
                    help="the drills' profile (default short: durations scaled, same faults; full: as written)")
    group.addoption("--mutants", action="store_true", default=False,
                    help="also run the mutation suite (tests/mutants/, ~20 min): shipped drills against planted faults")
    group.addoption("--no-report-render", action="store_true", default=False,
                    help="write the Allure results but do not render the report at the end (the suite's "
                         "first parts: its last part renders the results of all of them)")
    group.addoption("--backend", default="processes", choices=["processes", "docker"],
                    help="where the drills' and the shared integration clusters' brokers and Toxiproxy run: local "
                         "processes (default) or containers of a Compose project (docker; starts an engine as "
                         "root with apt, builds the images it lacks)")


# The run's own Allure report (results through allure-pytest, one single-file report at the end),
# and the time per folder of tests/ printed at the end of every run.
pytest_plugins = ["mirrordrill.reports.pytest_run_report", "tests.suite_timing"]
