"""Ctrl-C during ``./mirrordrill test``: the drill saves its summary, then the pytest session stops.

The drill engine absorbs the KeyboardInterrupt to stop its processes and write summary.json; the
drill test must then raise it again, or pytest would go on to the next drill as if nothing happened.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mirrordrill.primitives.import_root import IMPORT_ROOT
from tests.conftest import processes_under, read_until
from tests.integration.test_drill_engine import LONG_DRILL  # MM2 starts in seconds; the load runs 10 min

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]


def test_ctrl_c_in_a_drill_test_saves_its_summary_and_ends_the_session(tmp_path):
    drills = tmp_path / "drills"
    drills.mkdir()
    for name in ("a-first", "b-second"):  # collected in this order: the second must never start
        (drills / f"{name}.yaml").write_text(LONG_DRILL.replace("name: long-drill", f"name: {name}"))
    basetemp = tmp_path / "bt"
    cmd = [sys.executable, "-m", "pytest", str(REPO / "tests" / "drills" / "test_drills.py"), "--drills", str(drills),
           "--profile", "full", "--basetemp", str(basetemp), "-p", "no:cacheprovider", "-p", "no:allure_pytest",
           "-s", "-q"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=REPO,
                            env=dict(os.environ, PYTHONPATH=str(IMPORT_ROOT)))
    try:
        lines = read_until(proc, "load running for", 240)
        assert any("load running for" in line for line in lines), "".join(lines)
        time.sleep(3)
        proc.send_signal(signal.SIGINT)
        rest, _ = proc.communicate(timeout=180)
        lines.append(rest)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    output = "".join(lines)
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, output
    summaries = list(basetemp.rglob("summary.json"))
    assert [p.parent.name for p in summaries] == ["drill-a-first0"], output
    summary = json.loads(summaries[0].read_text())
    assert summary["interrupted"] is True and summary["verdict"] == "interrupted"
    assert not list(basetemp.glob("drill-b-second*")), "the session went on to the next drill after Ctrl-C"
    assert processes_under(tmp_path) == []
