"""The replicator as a Spark application: packaged to ship alone and started with spark-submit.

The package is a zip of ``mirrordrill/replicator/`` and ``mirrordrill/primitives/`` (the only
layer below it, with the namespace's ``__init__``) handed to ``--py-files``; the main file is a
two-line launcher beside it. The driver runs here (client mode): spark-submit's JVM starts Python
as its child, so a clean stop signals that Python process, which stops its Spark queries first,
exactly as ``python -m mirrordrill.replicator`` does.
"""

from __future__ import annotations

import os
import signal
import sys
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mirrordrill.harness.lab.spark.deployment import SparkDeployment
from mirrordrill.harness.lab.spark.standalone import spark_home
from mirrordrill.primitives.bootstrap import REPO_ROOT
from mirrordrill.primitives.import_root import IMPORT_ROOT
from mirrordrill.primitives.ports import LOOPBACK
from mirrordrill.primitives.process import ManagedProcess

# the replicator and the one layer it may import (tests/unit/test_layers.py): it ships alone
PACKAGES = ("replicator", "primitives")
LAUNCHER = '''"""spark-submit's main file: the packaged replicator's own CLI."""
import sys

from mirrordrill import replicator
from mirrordrill.replicator.__main__ import main

print(f"mirrordrill: replicator package loaded from {replicator.__file__}", flush=True)
sys.exit(main())
'''


def package_replicator(out_dir: Path) -> tuple[Path, Path]:
    """Write ``replicator.zip`` (every .py file of the packages) and the launcher; returns both paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    archive = out_dir / "replicator.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as z:
        z.write(IMPORT_ROOT / "mirrordrill" / "__init__.py", "mirrordrill/__init__.py")
        for package in PACKAGES:
            for f in sorted((REPO_ROOT / package).rglob("*.py")):
                if "__pycache__" not in f.parts:
                    z.write(f, f"mirrordrill/{f.relative_to(REPO_ROOT).as_posix()}")
    launcher = out_dir / "run_replicator.py"
    launcher.write_text(LAUNCHER)
    return archive, launcher


@dataclass(frozen=True)
class JavaOptions:
    """JVM options of a submitted replicator's driver and of its executors (empty: the JVMs' defaults).

    In client mode the driver JVM is spark-submit's own, started before the replicator's Python
    runs, so the options the replicator sets on its session (``replicator.driver_jvm``: its JIT,
    its temporary folder) come too late for it; they go on spark-submit's command line instead.
    Without them the driver JIT was the JVM's tiered default and Spark's artifacts-<uuid> folders
    landed in the machine's /tmp."""

    driver: tuple[str, ...] = ()
    executor: tuple[str, ...] = ()


def submit_argv(deployment: SparkDeployment, master_url: str, jars: Sequence[Path],
                archive: Path, launcher: Path, app_args: Sequence[str],
                java: JavaOptions = JavaOptions()) -> list[str]:
    """spark-submit's command line for the replicator, executors and cores as the deployment says.

    No ``--name``: the replicator names its own session (``mirrordrill-replicator``), which wins.
    """
    argv = [str(spark_home() / "bin" / "spark-submit"), "--master", master_url, "--deploy-mode", "client",
            "--executor-cores", str(deployment.executor_cores),
            "--executor-memory", deployment.executor_memory,
            "--conf", f"spark.executor.instances={deployment.executors}",
            "--jars", ",".join(str(j) for j in jars), "--py-files", str(archive)]
    if java.driver:
        argv += ["--driver-java-options", " ".join(java.driver)]
    if java.executor:
        argv += ["--conf", f"spark.executor.extraJavaOptions={' '.join(java.executor)}"]
    if master_url.startswith("spark://"):
        # standalone sizes an application by total cores: executors x cores gives the executor count
        argv += ["--total-executor-cores", str(deployment.slots)]
        if all(h.split(":")[0] in (LOOPBACK, "localhost") for h in master_url[len("spark://"):].split(",")):
            # a cluster on this machine: executors call the driver back on loopback too
            argv += ["--conf", f"spark.driver.host={LOOPBACK}", "--conf", f"spark.driver.bindAddress={LOOPBACK}"]
    return [*argv, str(launcher), *app_args]


@dataclass
class SubmittedDriver(ManagedProcess):
    """spark-submit's JVM with the Python driver as its child; SIGTERM (or ``sig``) goes to the Python
    driver."""

    def terminate(self, sig: int = signal.SIGTERM) -> None:
        self.stop_asked = True
        jvm = self.pid
        if jvm is None or not self.running:
            return
        children = _children(jvm)
        targets = [pid for pid in children if _is_python(pid)] or [jvm]
        for pid in targets:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass


def _children(pid: int) -> list[int]:
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        try:
            out += [int(p) for p in task.read_text().split()]
        except OSError:
            pass
    return out


def _is_python(pid: int) -> bool:
    try:
        return "python" in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode(errors="replace")
    except OSError:
        return False


def driver_env(base: dict[str, str]) -> dict[str, str]:
    """The submitted driver finds the replicator only in the zip: the import root leaves PYTHONPATH."""
    env = dict(base)
    ours = {str(REPO_ROOT), str(IMPORT_ROOT)}
    env["PYTHONPATH"] = os.pathsep.join(p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p not in ours)
    env["PYSPARK_PYTHON"] = env["PYSPARK_DRIVER_PYTHON"] = sys.executable
    return env
