"""Each drill file is one test: it passes when the drill ran and every expectation held.

The drill's plots, summary and logs go into this test's Allure result (allure-pytest), and the
drill's own per-run writer is not called: a drill under pytest is one result, not two.
"""

from __future__ import annotations

import pytest

from mirrordrill.harness.drill.engine import Drill
from mirrordrill.harness.drill.summary import render_table
from mirrordrill.harness.drill.validate import load_scenario
from mirrordrill.reports.allure_results import attach_to_pytest
from tests.conftest import stop_if_interrupted

pytestmark = [pytest.mark.drill, pytest.mark.integration]


def test_drill(drill_file, artifacts, tmp_path_factory, request, lab_backend):
    replicator = request.config.getoption("--drill-replicator")
    scenario = load_scenario(drill_file, replicator, request.config.getoption("--profile"))
    out = tmp_path_factory.mktemp(f"drill-{drill_file.stem}")
    result = Drill(scenario, drill_file, out, replicator=replicator, artifacts=artifacts,
                   backend=lab_backend.name).run()
    if request.config.getoption("--alluredir", default=None):
        attach_to_pytest(out)  # the same plots, summary and logs `mirrordrill run` puts in its report
    stop_if_interrupted(result.summary)
    failed = [e.name for e in result.summary.expectations if not e.passed]
    assert result.passed, (f"drill {scenario.name} failed: {failed or result.summary.error}\n"
                           f"{render_table(result.summary)}\nrun folder: {out}")

