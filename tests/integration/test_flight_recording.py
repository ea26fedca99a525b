"""run --jfr on real JVMs: the JDK's recorder writes a recording, the summarizer counts it, and a drill of
the bundled replicator leaves each node's recording and its ranked summary from the first record copied."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from mirrordrill.harness.drill.engine import Drill
from mirrordrill.harness.drill.flight_recordings import SUMMARY_FILE, first_copy_ms
from mirrordrill.harness.drill.validate import parse_scenario
from mirrordrill.primitives.import_root import IMPORT_ROOT
from mirrordrill.primitives.jvm_flight_recording import recording_flags, summarize
from tests.conftest import processes_under

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]

BUSY = """\
public class Busy {
    static long spin(long x) { return x + Long.toHexString(x).length(); }
    static void pause() { java.util.concurrent.locks.LockSupport.parkNanos(300_000_000L); }
    public static void main(String[] args) throws Exception {
        long end = System.currentTimeMillis() + 2000, x = 0;
        while (System.currentTimeMillis() < end) { x = spin(x); }
        pause();
        System.out.println(x);
    }
}
"""


def test_a_recording_of_a_busy_jvm_is_counted_per_thread_and_method(tmp_path, artifacts):
    source = tmp_path / "Busy.java"
    source.write_text(BUSY)
    recording = tmp_path / "flight.jfr"
    done = subprocess.run([artifacts.java, *recording_flags(recording), str(source)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0 and "StartFlightRecording" not in done.stdout, done.stdout + done.stderr
    profile = summarize(recording, artifacts.java)
    main = next(t for t in profile.threads if t.kind == "main")
    assert main.samples >= 100, profile.as_dict()  # 2 s busy at the 1 ms period
    assert "Busy.spin" in [m.method for m in main.total_methods]
    assert "Busy.main" in [m.method for m in main.total_methods]
    assert sum(m.samples for m in main.self_methods) <= main.samples
    # the 300 ms park, by the method that asked for it
    assert 250 <= main.waited_ms.get("Busy.pause", 0) <= 2000, main.waited_ms
    # the window: nothing of it from a moment after the JVM ended
    later = summarize(recording, artifacts.java, from_ms=int(time.time() * 1000) + 60_000)
    assert later.samples == 0 and later.threads == []


def short_quickstart() -> str:
    data = yaml.safe_load((REPO / "scenarios" / "quickstart.yaml").read_text())
    data.update(name="quickstart-recorded", duration="15s", drain_timeout="45s", timeline=[])
    data["expectations"] = {"lost": 0}
    return yaml.safe_dump(data)


def test_a_drill_with_jfr_leaves_each_replicator_node_s_recording_and_summary(tmp_path, artifacts):
    path = tmp_path / "recorded.yaml"
    path.write_text(short_quickstart())
    out = tmp_path / "run"
    result = Drill(parse_scenario(path.read_text(), str(path)), path, out, artifacts=artifacts,
                   flight_recording=True).run()
    assert result.summary.passed, result.summary.error
    node = out / "replicator" / "pyspark" / "dr"
    assert (node / "flight.jfr").stat().st_size > 0
    summary = json.loads((node / SUMMARY_FILE).read_text())
    starts = json.loads((out / "summary.json").read_text())["replicator_starts"]
    assert summary["from_ms"] == first_copy_ms(starts) is not None  # the copying, not the start-up
    kinds = {t["thread_kind"]: t for t in summary["threads"]}
    # a local master's tasks run in the driver: they copy the records, so they are in its recording
    tasks = kinds["Executor task launch worker-#"]
    assert tasks["samples"] > 0 and tasks["self"] and tasks["total"], summary
    assert sum(tasks["waited_ms"].values()) > 0, tasks  # between records a real-time task waits for the next
    assert (out / "drill.log").read_text().count("flight recording replicator/pyspark/dr: ") == 1
    assert processes_under(out) == []


def test_jfr_on_a_spark_cluster_master_is_refused_before_anything_starts(tmp_path):
    out = tmp_path / "run"
    done = subprocess.run([sys.executable, "-m", "mirrordrill.harness.cli.commands", "run", "quickstart", "--jfr",
                           "--spark-master", "standalone", "--out", str(out)], cwd=tmp_path, text=True,
                          capture_output=True, timeout=120, env=dict(os.environ, PYTHONPATH=str(IMPORT_ROOT)))
    assert done.returncode == 2 and "on a Spark cluster the executors copy the records" in done.stderr, done.stderr
    assert not out.exists()
