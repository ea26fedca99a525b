"""The rendered report, opened in headless Chromium: the drill, its figures and its plots are shown."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.integration.report_fixtures import tiny_run_dir

pytestmark = pytest.mark.integration

# Waits for the test page's description (an iframe) and reports what a person would see there.
# It takes 1-3 s here; the wait is generous (the browser's own limit is 120 s) for a loaded
# 2-core machine, and when it runs out the failure says what the page showed instead.
_SHOWN = r"""
(async () => {
  const started = Date.now();
  let state = null;
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


def test_report_shows_the_drill_its_figures_and_plots(tiny_run, tmp_path):
    from reports.browser import Browser
    from reports.render import render
    history = tmp_path / "history.jsonl"
    first = render([tiny_run], tmp_path / "report", history=history)
    assert first.html.name == "index.html"
    assert [p.name for p in first.html.parent.glob("*.html")] == ["index.html"]  # one file to mail
    assert "googletagmanager" not in first.html.read_text()  # opening a drill report calls no one
    url = f"{first.html.as_uri()}#/{_test_result_id(first.html.parent)}"
    browser = Browser.find()
    looked = browser.evaluate(url, _SHOWN)
    seen = looked["shown"]
    assert seen is not None, f"the test page never showed its description with its plots: {looked['state']}"
    assert "tiny-report [mirrormaker2]" in seen["page"]
    assert "lost=0" in seen["description"] and "acked=" in seen["description"]
    assert len(seen["images"]) == 4
    assert all(i["complete"] and i["width"] > 500 for i in seen["images"]), seen["images"]
    shot = browser.screenshot(url, tmp_path / "report.png")
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
