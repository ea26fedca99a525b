"""``--mutants`` only: the mutation suite is long (about 20 minutes), so without the option it is not collected.

The terminal summary prints each mutant's outcome and the score (killed/total).
"""

from __future__ import annotations

from pathlib import Path

import pytest

OUTCOMES = pytest.StashKey[list]()


def pytest_ignore_collect(collection_path: Path, config):
    if not config.getoption("--mutants"):
        return True
    return None


def pytest_configure(config):
    config.stash[OUTCOMES] = []


def pytest_terminal_summary(terminalreporter, config):
    outcomes = config.stash.get(OUTCOMES, [])
    if not outcomes:
        return
    killed = sum(1 for o in outcomes if o["killed"])
    terminalreporter.section(f"mutation score: {killed}/{len(outcomes)} killed")
    for o in outcomes:
        verdict = "killed" if o["killed"] else "SURVIVED"
        terminalreporter.write_line(f"{o['drill']:<40} x {o['fault']:<28} -> {verdict}: {o['why']}")
