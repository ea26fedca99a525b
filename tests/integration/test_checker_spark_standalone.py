"""The Spark checker on a Spark standalone master with two executors agrees exactly with the reference.

The checker's benchmark, as a user runs it with ``--spark-master standalone --executors 2``: it starts a
master and two one-core workers, checks a flow with every kind of fault on them, and exits 1 unless
the reference matches the injected faults and the Spark checker's result equals the reference's.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from mirrordrill.primitives.import_root import IMPORT_ROOT
from tests.conftest import processes_under

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]


def test_the_spark_checker_on_two_standalone_executors_agrees_with_the_reference(tmp_path):
    # TMPDIR: the benchmark's folder (histories, the Spark daemons' folders) lands under tmp_path
    env = dict(os.environ, PYTHONPATH=str(IMPORT_ROOT), TMPDIR=str(tmp_path))
    ran = subprocess.run([sys.executable, "-m", "mirrordrill.harness.drill.checker.bench", "--records", "30000",
                          "--spark-master", "standalone", "--executors", "2"],
                         cwd=tmp_path, env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         timeout=600)
    assert ran.returncode == 0, ran.stdout[-4000:]
    assert "master and 2 worker(s) up" in ran.stdout and "results agree: True" in ran.stdout, ran.stdout[-4000:]
    assert processes_under(tmp_path) == []
