"""Proof that each drill can fail: run a shipped drill against a planted fault; the mutant must be killed.

A mutant is killed when the drill FAILED on an expectation or built-in invariant the mutant is aimed
at (named in the outcome); a drill that passed, failed only on other expectations, or stopped on an
error before judging, lets it survive.
"""

from __future__ import annotations

import pytest

from mirrordrill.harness.drill.engine import Drill
from mirrordrill.harness.drill.summary import render_table
from mirrordrill.harness.drill.validate import parse_scenario
from mirrordrill.replicator.planted_faults import FAULT_ENV, SUITE_ENV
from tests.conftest import processes_under, stop_if_interrupted
from tests.mutants.conftest import OUTCOMES
from tests.mutants.planted import CONTROL, MUTANTS, Mutant, drill_text

pytestmark = [pytest.mark.integration, pytest.mark.drill]


def test_the_faultless_pipe_replicator_passes_the_quickstart(artifacts, tmp_path, request):
    result = run_drill(CONTROL, artifacts, tmp_path, request.config.getoption("--profile"))
    stop_if_interrupted(result.summary)
    assert processes_under(tmp_path) == []
    assert result.passed, f"the control failed, so no pipe mutant's kill means anything:\n{render_table(result.summary)}"


def run_drill(mutant: Mutant, artifacts, tmp_path, profile: str):
    """The drill at ``profile`` (the suite's ``--profile``: short unless told, as CI runs the drills
    and as their limits were calibrated)."""
    text = drill_text(mutant)
    path = tmp_path / mutant.drill
    path.write_text(text)
    return Drill(parse_scenario(text, str(path), profile=profile), path, tmp_path / "run", artifacts=artifacts).run()


@pytest.mark.parametrize("mutant", MUTANTS, ids=[m.id for m in MUTANTS])
def test_the_drill_kills_the_mutant(mutant: Mutant, artifacts, tmp_path, monkeypatch, request):
    if mutant.planted_fault:
        monkeypatch.setenv(SUITE_ENV, "1")
        monkeypatch.setenv(FAULT_ENV, mutant.planted_fault)
    result = run_drill(mutant, artifacts, tmp_path, request.config.getoption("--profile"))
    stop_if_interrupted(result.summary)

    failed = [e.name for e in result.summary.expectations if not e.passed]
    on_aim = [name for name in failed if name.startswith(mutant.aimed_at)]
    killed = not result.passed and bool(on_aim) and result.summary.error is None
    why = (", ".join(failed) if killed else
           f"error before judging: {result.summary.error}" if result.summary.error else
           "the drill passed" if result.passed else
           f"failed, but on none of {', '.join(mutant.aimed_at)}: {failed}")
    request.config.stash[OUTCOMES].append({"drill": mutant.drill, "fault": mutant.fault, "killed": killed, "why": why})
    print(f"\n{mutant.drill} x {mutant.fault}: {'killed' if killed else 'SURVIVED'}: {why}")
    assert processes_under(tmp_path) == []
    assert killed, f"mutant survived: {why}\n{render_table(result.summary)}\nrun folder: {tmp_path / 'run'}"
