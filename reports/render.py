"""HTML report of one or more drill runs, rendered by Allure 3 as a single mailable file.

Allure 3 (npm ``allure``, no Java) is installed by the bootstrap; it is run directly, not
through npx. Its awesome plugin with ``singleFile`` inlines scripts, data and attachments into
one ``index.html``. The history JSONL sits next to the run folders (``runs/.allure-history.jsonl``
by default), so each new report shows the trend of every earlier run of the same drills.

A drill report opens on its answer: the runs' verdicts and headline figures, written as Allure
metrics (:mod:`reports.headline`), in the Metrics section the report opens on; the report's
title carries the verdicts too.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from mirrordrill.harness.drill.results import DrillResults, ResultsUnavailable, load_results
from mirrordrill.reports.allure_results import RESULTS_DIR, write_allure_results
from mirrordrill.reports.headline import verdict_word, write_headline
from mirrordrill.reports.offline_html import UnexpectedReportLayout, make_offline

HISTORY_FILE = ".allure-history.jsonl"
REPORT_FILE = "index.html"


class ReportError(RuntimeError):
    """The report could not be rendered: a run folder without readable results (the message says
    how to re-run the drill; ``bad_input`` is true), or Allure failing (the message carries its output)."""

    def __init__(self, message: str, bad_input: bool = False) -> None:
        super().__init__(message)
        self.bad_input = bad_input


@dataclass(frozen=True)
class RenderedReport:
    """Where the report and the history it extended are."""

    html: Path
    history: Path


def default_history(run_dirs: list[Path]) -> Path:
    """The history file beside the runs: ``<common parent of the run folders>/.allure-history.jsonl``."""
    parents = {p.resolve().parent for p in run_dirs}
    base = Path(os.path.commonpath([str(p) for p in parents])) if parents else Path.cwd()
    return base / HISTORY_FILE


def allure_config(name: str, output: Path, history: Path, opens_on_metrics: bool = False) -> dict:
    """Allure 3 configuration: awesome plugin in single-file mode, history in a JSONL file; a drill
    report opens on its Metrics section (the verdicts and headline figures) instead of the test tree."""
    options: dict = {"singleFile": True, "reportName": name, "groupBy": ["suite", "subSuite"]}
    if opens_on_metrics:
        options["defaultSection"] = "metrics"
    return {"name": name, "output": str(output), "historyPath": str(history), "plugins": {"awesome": {"options": options}}}


def render_report(run_dirs: list[Path], out_dir: Path, history: Path | None = None,
                  name: str | None = None, allure_cli: Path | None = None) -> Path:
    """Render ``out_dir/index.html`` from the runs (writing their Allure results when missing)."""
    return render(run_dirs, out_dir, history, name, allure_cli).html


def render(run_dirs: list[Path], out_dir: Path, history: Path | None = None, name: str | None = None,
           allure_cli: Path | None = None) -> RenderedReport:
    """As :func:`render_report`, returning where the history went too."""
    run_dirs = [Path(d).resolve() for d in run_dirs]
    try:
        runs = [load_results(d) for d in run_dirs]
    except ResultsUnavailable as e:
        raise ReportError(str(e), bad_input=True) from None
    results = []
    for d in run_dirs:
        r = d / RESULTS_DIR
        # Results from an older mirrordrill (or an interrupted write) are regenerated from the run.
        if not any(r.glob("*-result.json")):
            write_allure_results(d)
        results.append(r)
    history = Path(history).resolve() if history else default_history(run_dirs)
    # The headline belongs to this report's set of runs, not to any one run's results folder.
    with tempfile.TemporaryDirectory(prefix="mirrordrill-headline-") as headline:
        write_headline(runs, Path(headline))
        html = generate([*results, Path(headline)], out_dir, name or _title(runs), history, allure_cli,
                        opens_on_metrics=True)
    return RenderedReport(html, history)


def generate(results: list[Path], out_dir: Path, title: str, history: Path, allure_cli: Path | None = None,
             opens_on_metrics: bool = False) -> Path:
    """One single-file report of Allure results folders (drill runs, or a pytest run): ``out_dir/index.html``.

    ``history`` is the JSONL trend Allure extends; a render of results it already holds adds no point.
    """
    out_dir = Path(out_dir).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    history.parent.mkdir(parents=True, exist_ok=True)
    earlier = history.read_text().splitlines(keepends=True) if history.exists() else []
    config = out_dir.parent / f".{out_dir.name}.allurerc.json"
    config.write_text(json.dumps(allure_config(title, out_dir, history, opens_on_metrics), indent=2))
    if allure_cli is None:
        from mirrordrill.primitives.bootstrap import Bootstrap
        allure_cli = Bootstrap().allure_cli()
    cmd = [str(allure_cli), "generate", *map(str, results), "--config", str(config), "--output", str(out_dir)]
    # Allure prints coloured progress; keep it for the error message only.
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=out_dir, env={**os.environ, "NO_COLOR": "1"},
                          timeout=600)
    config.unlink(missing_ok=True)
    html = out_dir / REPORT_FILE
    if proc.returncode != 0 or not html.exists():
        raise ReportError(f"allure generate failed (exit {proc.returncode}): {' '.join(cmd)}\n"
                          f"{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
    try:
        make_offline(html)
    except UnexpectedReportLayout as e:
        raise ReportError(str(e)) from None
    _drop_repeated_entry(history, earlier)
    return html


def _result_ids(line: str) -> set[str]:
    try:
        return {r.get("id") for r in json.loads(line).get("testResults", {}).values()}
    except (ValueError, AttributeError):
        return set()


def _drop_repeated_entry(history: Path, earlier: list[str]) -> None:
    """Rendering the same runs again must not add a second point to every trend: Allure appends
    an entry per report, so an entry whose results are all in earlier entries is taken back."""
    lines = history.read_text().splitlines(keepends=True) if history.exists() else []
    if len(lines) != len(earlier) + 1 or lines[:-1] != earlier:
        return  # not the one entry this render appended (another writer, or none): leave it
    seen = set().union(*(_result_ids(line) for line in earlier)) if earlier else set()
    new = _result_ids(lines[-1])
    if new and new <= seen:
        history.write_text("".join(earlier))


def _title(runs: list[DrillResults]) -> str:
    """``mirrordrill: drill [replicator] PASSED, ...``: which drills, and how each run ended."""
    names: list[str] = []
    for run in runs:
        label = f"{run.name} [{run.replicator}] {verdict_word(run)}"
        if label not in names:
            names.append(label)
    return "mirrordrill: " + (", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else ""))
