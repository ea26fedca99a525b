"""Spark standalone's master and workers as containers of the drill's Compose project.

The driver (spark-submit with the replicator) stays on the host; executors run inside the
worker containers. Two things make them work there: the run folder is mounted at its own
path (the replicator's interceptor writes its per-record figures into the replicator's folder
from the executors, and each worker keeps its work folder there), and the host's Python path,
which the driver hands to executors as the Python to run, is made a link to the image's
Python (the same version and the same pyspark, installed from the same pins).
"""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

from mirrordrill.harness.lab.compose.container import ContainerProcess
from mirrordrill.harness.lab.compose.project import ComposeRun
from mirrordrill.harness.lab.compose.spec import Mount, Service

KEPT_ENV = ("SPARK_LOCAL_IP", "SPARK_MASTER_OPTS", "SPARK_DAEMON_JAVA_OPTS", "SPARK_LOCAL_DIRS")


class SparkDaemonLauncher:
    """Called as ``SparkStandaloneCluster``'s launcher, with ``ManagedProcess``'s arguments."""

    def __init__(self, run: ComposeRun, image: str, spark_home: str, java_home: str, image_python: str,
                 mount_root: Path, host_python: str = sys.executable):
        self.run, self.image, self.spark_home = run, image, spark_home
        self.java_home, self.image_python, self.host_python = java_home, image_python, host_python
        self.mount_root = Path(mount_root)

    def service(self, name: str, argv, log_path: Path, env: dict | None) -> Service:
        daemon = [f"{self.spark_home}/bin/spark-class", *map(str, argv[1:])]
        link = (f"mkdir -p {shlex.quote(str(Path(self.host_python).parent))} && "
                f"ln -sf {shlex.quote(self.image_python)} {shlex.quote(self.host_python)}")
        command = ("sh", "-c", f"{link} && exec {shlex.join(daemon)} >>{shlex.quote(str(log_path))} 2>&1")
        environment = (("JAVA_HOME", self.java_home), *((k, (env or {})[k]) for k in KEPT_ENV if k in (env or {})))
        return Service(re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-"), self.image, command, role="spark",
                       mounts=(Mount(str(self.mount_root), str(self.mount_root)),), environment=environment,
                       stop_grace_s=10)

    def __call__(self, *, name: str, argv, log_path: Path, cwd: Path | None = None, env: dict | None = None,
                 infrastructure: bool = True, stop_timeout_s: float = 10.0) -> ContainerProcess:
        service = self.service(name, argv, log_path, env)
        self.run.add(service)
        return ContainerProcess(name=name, service=service.name, run=self.run, log_path=Path(log_path),
                                infrastructure=infrastructure, stop_timeout_s=stop_timeout_s, cwd=cwd)
