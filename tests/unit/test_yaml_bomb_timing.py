"""A "billion laughs" drill file is answered as fast as a clean one, in a process of its own."""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

from mirrordrill.harness.cli import commands as cli
from tests.unit.test_bad_drill_files import LAUGHS
from tests.unit.test_scenario_validation import BASE


def _timed_validate(path: Path) -> tuple[subprocess.CompletedProcess, float]:
    """``mirrordrill validate PATH`` in its own process, and the CPU seconds it took: a bomb that got
    through could take this process down, and the timeout stops one that would hang. CPU time, not
    wall time: the machine's other work would otherwise weigh on one run and not the other."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run([sys.executable, "-m", "mirrordrill.harness.cli.commands", "validate", str(path)], capture_output=True,
                          text=True, timeout=60, cwd=Path(__file__).resolve().parents[2])
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return done, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def test_a_billion_laughs_file_is_answered_as_fast_as_a_clean_one(tmp_path):
    clean, bomb = tmp_path / "clean.yaml", tmp_path / "bomb.yaml"
    clean.write_text(BASE)
    bomb.write_text(BASE + LAUGHS)
    ok, clean_s = _timed_validate(clean)
    assert ok.returncode == cli.EXIT_OK, ok.stderr
    refused, bomb_s = _timed_validate(bomb)
    assert refused.returncode == cli.EXIT_USAGE, refused.stderr
    [line] = refused.stderr.strip().splitlines()  # one plain line, no traceback
    assert line.startswith(f"{bomb}: (syntax): the file holds 490,329,") and "at most 10,000" in line, line
    assert bomb_s < clean_s + 0.5, (bomb_s, clean_s)
