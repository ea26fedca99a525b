"""Each drill file is one test: it passes when the drill ran and every expectation held."""

from __future__ import annotations

import pytest

from harness.scenario.engine import Drill
from harness.scenario.summary import render_table
from harness.scenario.validate import load_scenario

pytestmark = [pytest.mark.drill, pytest.mark.integration]


def test_drill(drill_file, artifacts, tmp_path_factory, request):
    scenario = load_scenario(drill_file)
    replicator = request.config.getoption("--drill-replicator")
    out = tmp_path_factory.mktemp(f"drill-{drill_file.stem}")
    result = Drill(scenario, drill_file, out, replicator=replicator, artifacts=artifacts).run()
    _attach_to_allure(out)
    failed = [e["name"] for e in result.summary["expectations"] if not e["passed"]]
    assert result.passed, (f"drill {scenario.name} failed: {failed or result.summary.get('error')}\n"
                           f"{render_table(result.summary)}\nrun folder: {out}")


def _attach_to_allure(run_dir) -> None:
    """When pytest runs with --alluredir, the drill's report material goes with its test result."""
    try:
        from reports.allure_results import attach_to_current_test
    except ImportError:
        return
    attach_to_current_test(run_dir)
