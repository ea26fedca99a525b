"""The rendered report, opened in headless Chromium: it opens on the verdict and the headline
figures; one click deeper, the drill's test page shows its figures and its plots."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.integration.report_fixtures import tiny_run_dir

pytestmark = pytest.mark.integration

# Reads the screen the report opens on, without a click: each table of the Metrics section (its
# group title) and its rows' cells, and whether each row lies inside the window. It takes 1-3 s
# here; the wait is generous for a loaded 2-core machine, and when it runs out the failure says
# what the page showed instead.
_FIRST_SCREEN = r"""
(async () => {
  const started = Date.now();
  let state = null;
  while (Date.now() < started + 90000) {
    const view = document.querySelector('[data-testid="metrics-view"]');
    state = {after_ms: Date.now() - started, href: location.href, ready: document.readyState, view: !!view,
             page: document.body ? document.body.innerText.slice(0, 600) : null};
    if (view && view.querySelector('h3')) {
      const groups = {};
      for (const heading of view.querySelectorAll('section h3')) {
        groups[heading.innerText] = [...heading.parentElement.querySelectorAll('tbody tr')].map(tr => {
          const box = tr.getBoundingClientRect();
          return {cells: [...tr.cells].map(c => c.innerText.trim()),
                  on_first_screen: box.top >= 0 && box.bottom <= window.innerHeight && box.height > 0};
        });
      }
      return {groups, title: document.title, state};
    }
    await new Promise(r => setTimeout(r, 250));
  }
  return {groups: null, state};
})()
"""

# From the first screen, one step deeper: the test page of the drill's flow (set after the report
# opened, as a click in it does: a link that names a test page is sent to the default section by
# Allure when the report loads). Waits for the page's description (an iframe) and its plots.
_TEST_PAGE = r"""
(async () => {
  const started = Date.now();
  let state = null;
  while (!document.querySelector('[data-testid="metrics-view"]') && Date.now() < started + 90000) {
    await new Promise(r => setTimeout(r, 250));
  }
  location.hash = '#/' + TEST_ID;
  while (Date.now() < started + 90000) {
    const frame = document.querySelector('iframe[data-testid="test-result-description-frame"]');
    const doc = frame && frame.contentDocument;
    const images = doc ? [...doc.images] : [];
    // what the page looked like at the last look: the failure message when it never settles
    state = {after_ms: Date.now() - started, href: location.href, ready: document.readyState,
             frame: !!frame, frame_document: !!doc, images: images.length,
             page: document.body ? document.body.innerText.slice(0, 600) : null};
    if (images.length) {
      frame.scrollIntoView();
      const shown = {page: document.body.innerText, description: doc.body.innerText,
                     images: images.map(i => ({alt: i.alt, complete: i.complete, width: i.naturalWidth}))};
      if (images.every(i => i.complete && i.naturalWidth > 0)) return {shown, state};
    }
    await new Promise(r => setTimeout(r, 250));
  }
  return {shown: null, state};
})()
"""


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory, artifacts):
    return tiny_run_dir(tmp_path_factory.getbasetemp() / "reports", artifacts)


def _test_result_id(report_dir) -> str:
    # the awesome plugin writes an index of its test results beside index.html
    ids = list(json.loads((report_dir / "test-results.json").read_text())["byId"])
    assert len(ids) == 1, ids
    return ids[0]


def _first_screen(browser, html) -> dict[str, dict[str, dict]]:
    """The tables the report opens on: group title -> row title -> the row."""
    looked = browser.evaluate(html.as_uri(), _FIRST_SCREEN)
    assert looked["groups"] is not None, f"the report never showed its figures: {looked['state']}"
    return {group: {row["cells"][0]: row for row in rows} for group, rows in looked["groups"].items()}


# One consumer group's failover as the checker saves it in summary.json.
_FAILOVER = {"group": "orders-app", "strategy": "latest", "primary": "primary", "dr": "dr",
             "failure_ts_ms": 1767225610000, "available": 900, "processed": 888, "skipped": 0, "reprocessed": 30,
             "reprocessed_across_failover": 30, "rto_s": 4.5, "rpo_records": 12, "rpo_window_s": 0.8,
             "rpo_first_ack_ts_ms": None, "rpo_last_ack_ts_ms": None, "skipped_sample": [], "rpo_sample": []}


def _violated(summary: dict) -> int:
    return sum(1 for e in summary["expectations"] if not e["passed"] and not e.get("relaxed"))


def _shows_flow(rows: dict[str, dict], flow: dict, label: str) -> None:
    # the Total column: one sample per row, the run's own figure with its unit
    expected = {f"lost · {label}": f"{flow['lost']} records", f"duplicates · {label}": f"{flow['duplicates']} records",
                f"p50 latency · {label}": f"{flow['latency_ms']['p50']} ms",
                f"p99 latency · {label}": f"{flow['latency_ms']['p99']} ms"}
    shown = {title: rows[title]["cells"][2] for title in expected if title in rows}
    assert shown == expected, rows
    assert all(rows[title]["on_first_screen"] for title in expected), rows


def test_the_report_opens_on_the_verdict_and_the_headline_figures(tiny_run, tmp_path):
    from mirrordrill.reports.browser import Browser
    from mirrordrill.reports.render import render
    summary = json.loads((tiny_run / "summary.json").read_text())
    html = render([tiny_run], tmp_path / "report", history=tmp_path / "history.jsonl").html
    screen = _first_screen(Browser.find(), html)
    word = summary["verdict"].upper()
    (verdict,) = screen["Verdict"].values()
    assert verdict["cells"][0].startswith(f"tiny-report [mirrormaker2]: {word}"), verdict
    assert verdict["cells"][2] == f"{_violated(summary)} violated" and verdict["on_first_screen"]
    if word == "FAILED":  # the violated expectations are named on the verdict's row
        assert all(e["name"] in verdict["cells"][0] for e in summary["expectations"] if not e["passed"])
    (flow,) = summary["flows"]
    _shows_flow(screen["Flow primary->dr"], flow, "mirrormaker2")


def test_a_report_of_two_replicators_opens_on_them_side_by_side(tiny_run, tmp_path):
    from mirrordrill.reports.browser import Browser
    from mirrordrill.reports.render import render
    # A second run of the drill as a PySpark run with a failover leaves it: a copy of the run whose
    # summary.json names the other replicator, other figures and a failed-over consumer group (the
    # report reads nothing else of a run).
    other = tmp_path / "pyspark-run"
    shutil.copytree(tiny_run, other, ignore=shutil.ignore_patterns("allure-results", "report", "env"))
    summary = json.loads((other / "summary.json").read_text())
    summary["replicator"] = "pyspark"
    flow = summary["flows"][0]
    flow["duplicates"] += 7
    flow["latency_ms"] = {k: (v + 100 if v is not None else None) for k, v in flow["latency_ms"].items()}
    summary["failovers"] = [_FAILOVER]
    (other / "summary.json").write_text(json.dumps(summary))
    first = json.loads((tiny_run / "summary.json").read_text())
    html = render([tiny_run, other], tmp_path / "report", history=tmp_path / "history.jsonl").html
    screen = _first_screen(Browser.find(), html)
    verdicts = list(screen["Verdict"])
    assert [v.split(":")[0] for v in verdicts] == ["tiny-report [mirrormaker2]", "tiny-report [pyspark]"], verdicts
    assert all(row["on_first_screen"] for row in screen["Verdict"].values())
    rows = screen["Flow primary->dr"]
    _shows_flow(rows, first["flows"][0], "mirrormaker2")
    _shows_flow(rows, flow, "pyspark")
    order = list(rows)  # each figure's rows of both replicators next to each other
    for figure in ("lost", "duplicates", "p50 latency", "p99 latency"):
        assert order.index(f"{figure} · pyspark") == order.index(f"{figure} · mirrormaker2") + 1, order
    failover = screen["Failover of consumer group orders-app (latest, primary->dr)"]
    shown = {title: (row["cells"][2], row["on_first_screen"]) for title, row in failover.items()}
    assert shown == {"RTO · pyspark": ("4.5 s", True), "RPO · pyspark": ("12 records", True),
                     "RPO window · pyspark": ("0.8 s", True), "skipped · pyspark": ("0 records", True),
                     "reprocessed · pyspark": ("30 records", True)}, shown


def test_report_shows_the_drill_its_figures_and_plots(tiny_run, tmp_path):
    from mirrordrill.reports.browser import Browser
    from mirrordrill.reports.render import render
    history = tmp_path / "history.jsonl"
    first = render([tiny_run], tmp_path / "report", history=history)
    assert first.html.name == "index.html"
    assert [p.name for p in first.html.parent.glob("*.html")] == ["index.html"]  # one file to mail
    assert "googletagmanager" not in first.html.read_text()  # opening a drill report calls no one
    browser = Browser.find()
    test_page = _TEST_PAGE.replace("TEST_ID", json.dumps(_test_result_id(first.html.parent)))
    looked = browser.evaluate(first.html.as_uri(), test_page)
    seen = looked["shown"]
    assert seen is not None, f"the test page never showed its description with its plots: {looked['state']}"
    assert "tiny-report [mirrormaker2]" in seen["page"]
    assert "lost=0" in seen["description"] and "acked=" in seen["description"]
    assert len(seen["images"]) == 4
    assert all(i["complete"] and i["width"] > 500 for i in seen["images"]), seen["images"]
    shot = browser.screenshot(first.html.as_uri(), tmp_path / "first-screen.png")
    assert shot.stat().st_size > 20_000

    def entries():
        return [json.loads(line) for line in history.read_text().splitlines() if line.strip()]

    # rendering the same run again adds no second point to the trend...
    render([tiny_run], tmp_path / "report-again", history=history)
    assert len(entries()) == 1
    # ...another run of the same drill extends it: the trend of quarterly drills. (A copy of the
    # run without its Allure results gets results of its own, as a new run would.)
    next_quarter = tmp_path / "next-quarter"
    shutil.copytree(tiny_run, next_quarter, ignore=shutil.ignore_patterns("allure-results", "env"))
    render([next_quarter], tmp_path / "report2", history=history)
    assert len(entries()) == 2


def test_chromium_leaves_nothing_in_the_machines_temporary_folder(monkeypatch):
    """Its profile and its singleton socket's folder go with it (the socket's was left in /tmp)."""
    import tempfile

    from mirrordrill.reports.browser import Browser
    # short: a Unix socket's path may have 108 bytes, and Chromium's goes two folders below this
    machine_tmp = Path(tempfile.mkdtemp(prefix="md-"))
    try:
        monkeypatch.setenv("TMPDIR", str(machine_tmp))
        monkeypatch.setattr(tempfile, "tempdir", None)  # read $TMPDIR again
        browser = Browser.find()
        assert browser.evaluate("data:text/html,<p>x</p>", "1 + 1") == 2
        assert "<p>x</p>" in browser.dump_dom("data:text/html,<p>x</p>")
        assert list(machine_tmp.iterdir()) == []
    finally:
        shutil.rmtree(machine_tmp, ignore_errors=True)
