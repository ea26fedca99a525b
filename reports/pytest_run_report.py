"""The test run's own Allure report: ``./mirrordrill test`` writes Allure results through
allure-pytest and renders them into one single-file report, as it does for a drill run.

Loaded from the root ``conftest.py``. Without ``--alluredir`` the results go to
``test-results/allure-results`` (replaced on every run); a person's own ``--alluredir`` is
kept and rendered the same way. ``--no-report-render`` writes the results without rendering
(the suite's first two parts: its last part renders them all). Drill tests attach their drill's plots, summary and logs
(``reports.allure_results.attach_to_pytest``). ``-p no:allure_pytest`` turns all of it off.
JUnit XML for CI systems comes from pytest as usual (``--junitxml``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

RESULTS = Path("test-results") / "allure-results"
REPORT = Path("test-results") / "allure-report"
HISTORY = Path("test-results") / ".allure-history.jsonl"


def _results_dir(config) -> Path | None:
    option = getattr(config.option, "allure_report_dir", None)
    return Path(option).resolve() if option else None


@pytest.hookimpl(tryfirst=True)  # before allure-pytest's own configure reads the option
def pytest_configure(config):
    if not config.pluginmanager.hasplugin("allure_pytest") or config.option.collectonly:
        return
    if getattr(config.option, "allure_report_dir", None) is None:
        config.option.allure_report_dir = str(config.rootpath / RESULTS)
        config.option.clean_alluredir = True


def render_run_report(root: Path, results: Path) -> tuple[str, bool]:
    """Render ``results`` into the run's single-file report: the line to print, and whether it worked."""
    from mirrordrill.reports.render import ReportError, generate
    try:
        html = generate([results], root / REPORT, "mirrordrill test run", root / HISTORY)
    except (ReportError, OSError) as e:
        # The tests' verdict stands; the missing report is said plainly, with its cause.
        return f"allure report of this run could not be rendered: {e}", False
    return f"allure report of this run: {html} (results: {results})", True


def pytest_terminal_summary(terminalreporter, config):
    results = _results_dir(config)
    if results is None or config.option.collectonly or not any(results.glob("*-result.json")):
        return
    if config.getoption("--no-report-render", default=False):
        return
    line, rendered = render_run_report(config.rootpath, results)
    terminalreporter.write_line(line, red=not rendered)
