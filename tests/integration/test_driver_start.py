"""The driver JVM starts before the master is known: the session still runs on the master given later,
and a process that fails before making its session leaves no JVM behind."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from mirrordrill.primitives.bootstrap import Bootstrap
from mirrordrill.primitives.import_root import IMPORT_ROOT

pytestmark = pytest.mark.integration

# what FlowSupervisor.run does: launch on "local[*]", then make the session on the slots it worked out
_SESSION = """
import sys
from pathlib import Path
from mirrordrill.replicator.driver_jvm import DriverStart, session_settings
# the replicator's jar, as every replicator process has it: the session registers its header function
jars = [Path(sys.argv[2])]
driver = DriverStart(session_settings(jars, Path(sys.argv[1]), [], "local[*]"), "local[*]", lambda: None).begin()
spark = driver.session("local[3]")
print(spark.sparkContext.master, spark.sparkContext.defaultParallelism, spark.range(5).count())
spark.stop()
"""

# a process whose start failed after the launch began: abandon stops the JVM before the process ends
_ABANDONED = """
import sys
from pathlib import Path
from pyspark import SparkContext
from mirrordrill.replicator.driver_jvm import DriverStart, session_settings
driver = DriverStart(session_settings([], Path(sys.argv[1]), [], "local[*]"), "local[*]", lambda: None).begin()
driver._thread.join()
proc = SparkContext._gateway.proc
driver.abandon()
print(proc.poll() is not None, SparkContext._gateway is None)
"""


def _run(script: str, tmp_path) -> str:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(IMPORT_ROOT), os.environ.get("PYTHONPATH", "")]),
               SPARK_LOCAL_IP="127.0.0.1")
    (tmp_path / "spark-tmp").mkdir(exist_ok=True)
    jar = Bootstrap().replicator_jar()
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path / "spark-tmp"), str(jar)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip().splitlines()[-1]


def test_the_session_runs_on_the_master_given_after_the_launch(tmp_path):
    assert _run(_SESSION, tmp_path) == "local[3] 3 5"


def test_a_launch_abandoned_before_its_session_stops_the_jvm(tmp_path):
    assert _run(_ABANDONED, tmp_path) == "True True"
