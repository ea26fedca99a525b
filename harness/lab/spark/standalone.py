"""A Spark standalone cluster (one master, N workers) from the pyspark install, on loopback.

Each daemon is ``spark-class org.apache.spark.deploy.master.Master`` / ``...worker.Worker`` as a
``ManagedProcess``, so the environment's supervisor stops it on every exit path. Everything
binds to 127.0.0.1: ``SPARK_LOCAL_IP`` for the RPC endpoints, and explicit ``--host`` flags
because the web UIs otherwise listen on every interface. The master's REST submission server
is off: it would take the fixed port 6066, and two drills on one machine would collide.

The master and worker JVMs compile with C1 only (``SPARK_DAEMON_JAVA_OPTS``, which Spark's
launch scripts give its daemons and not the executors a worker starts): they schedule and
watch, they carry no records, and with the tiered default their start spent about as much CPU
on C2 compilations as on everything else (docs/measurements/jvm-starts-*.json).
A person's own ``SPARK_DAEMON_JAVA_OPTS`` is kept as it is.

Each worker's scratch folder (``SPARK_LOCAL_DIRS``, which its executors inherit for shuffle
and fetched files) is in its own folder of the run: by default it is the JVM's /tmp, where an
executor stopped by a kill left a spark-<uuid> folder behind on every drill.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import requests

from mirrordrill.primitives.jvm_jit import jit_flags
from mirrordrill.primitives.ports import LOOPBACK, PortAllocator
from mirrordrill.primitives.process import ManagedProcess, ProcessError, child_environment

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
DAEMON_JAVA_OPTS = " ".join(jit_flags("c1"))  # the master's and workers' JVMs (see above)


def spark_home() -> Path:
    """The pyspark package folder: it holds bin/spark-class, bin/spark-submit and Spark's jars."""
    import pyspark
    return Path(pyspark.__file__).resolve().parent


def spark_env(java: str | None) -> dict[str, str]:
    """Environment for Spark's launch scripts: its home, its Java, loopback only."""
    env = child_environment()
    env["SPARK_HOME"] = str(spark_home())
    env["SPARK_LOCAL_IP"] = LOOPBACK
    if java and "JAVA_HOME" not in env:
        env["JAVA_HOME"] = str(Path(java).resolve().parent.parent)
    return env


def daemon_env(java: str | None) -> dict[str, str]:
    """``spark_env`` for the master and the workers: their JVMs compile with C1 only (see above)."""
    env = spark_env(java)
    env.setdefault("SPARK_DAEMON_JAVA_OPTS", DAEMON_JAVA_OPTS)
    return env


@dataclass(frozen=True)
class StandaloneSpec:
    workers: int = 2
    worker_cores: int = 2
    worker_memory: str = "2g"


# Makes one daemon's process from ManagedProcess's arguments: a local process by default, a
# container on the docker backend (``harness.lab.compose.spark``).
DaemonLauncher = Callable[..., ManagedProcess]


def local_daemon(**kwargs) -> ManagedProcess:
    return ManagedProcess(**kwargs)


class SparkStandaloneCluster:
    """Master and workers; started once per environment, stopped with it."""

    def __init__(self, spec: StandaloneSpec, workdir: Path, ports: PortAllocator, java: str | None = None,
                 launcher: DaemonLauncher = local_daemon):
        self.spec = spec
        self.workdir = Path(workdir)
        self.master_port, self.ui_port = ports.take(), ports.take()
        env = daemon_env(java)
        master_env = {**env, "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false"}
        spark_class = str(spark_home() / "bin" / "spark-class")
        self.master = launcher(
            name="spark master", log_path=self.workdir / "master.log", cwd=self.workdir, env=master_env,
            argv=[spark_class, MASTER_CLASS, "--host", LOOPBACK, "--port", str(self.master_port),
                  "--webui-port", str(self.ui_port)], infrastructure=True, stop_timeout_s=10.0)
        self.workers: list[ManagedProcess] = []
        for i in range(spec.workers):
            wdir = self.workdir / f"worker-{i}"
            self.workers.append(launcher(
                name=f"spark worker {i}", log_path=wdir / "worker.log", cwd=wdir,
                env={**env, "SPARK_LOCAL_DIRS": str(wdir / "local")}, infrastructure=True,
                stop_timeout_s=10.0,
                argv=[spark_class, WORKER_CLASS, "--host", LOOPBACK, "--port", str(ports.take()),
                      "--webui-port", str(ports.take()), "--cores", str(spec.worker_cores),
                      "--memory", spec.worker_memory, "--work-dir", str(wdir / "work"), self.url]))

    @property
    def url(self) -> str:
        return f"spark://{LOOPBACK}:{self.master_port}"

    @property
    def status_url(self) -> str:
        return f"http://{LOOPBACK}:{self.ui_port}/json/"

    @property
    def processes(self) -> list[ManagedProcess]:
        return [self.master, *self.workers]

    def status(self, timeout_s: float = 5.0) -> dict:
        """The master's JSON status: workers (state, cores, coresused), applications."""
        resp = requests.get(self.status_url, timeout=timeout_s)
        resp.raise_for_status()
        return resp.json()

    def start(self, timeout_s: float = 120.0) -> float:
        """Start the master, then the workers; returns seconds until every worker is ALIVE."""
        t0 = time.monotonic()
        deadline = t0 + timeout_s
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.master.start()
        self._wait(lambda s: s.get("status") == "ALIVE", deadline, "the master to answer", [self.master])
        for w in self.workers:
            if w.cwd is not None:  # each worker has its own folder (see __init__)
                w.cwd.mkdir(parents=True, exist_ok=True)
            w.start()
        self.wait_workers(len(self.workers), deadline)
        return time.monotonic() - t0

    def wait_workers(self, alive: int, deadline: float) -> None:
        self._wait(lambda s: s.get("aliveworkers", 0) >= alive, deadline, f"{alive} worker(s) to register",
                   [self.master, *self.workers])

    def _wait(self, ok, deadline: float, what: str, procs: list[ManagedProcess]) -> None:
        while True:
            for p in procs:
                if not p.running:
                    raise ProcessError(f"{p.name} exited at start (code {p.returncode}); log {p.log_path}:\n"
                                       f"{p.log_tail()}")
            try:
                if ok(self.status()):
                    return
            except (requests.RequestException, ValueError):
                pass
            if time.monotonic() > deadline:
                raise ProcessError(f"Spark standalone: gave up waiting for {what}; logs in {self.workdir}")
            time.sleep(0.5)

    def kill_worker(self, index: int) -> ManagedProcess:
        """SIGKILL one worker and the executors it launched (they are in its process group)."""
        if not 0 <= index < len(self.workers):
            raise IndexError(f"no Spark worker {index}; workers are 0..{len(self.workers) - 1}")
        worker = self.workers[index]
        worker.kill()
        return worker

    def describe(self) -> dict:
        return {"url": self.url, "ui": f"http://{LOOPBACK}:{self.ui_port}", "workers": self.spec.workers,
                "worker_cores": self.spec.worker_cores, "worker_memory": self.spec.worker_memory,
                "logs": [str(p.log_path) for p in self.processes]}
