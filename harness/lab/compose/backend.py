"""The docker backend: brokers, Toxiproxy and Spark standalone as containers of one Compose project per drill.

The environment asks it for a broker runner, the Toxiproxy process and (for
``replication.spark.master: standalone``) Spark's daemons; everything else (the replicator's
driver, the load, the harness's own clients) stays a local process talking to the
containers on loopback, as it would to local brokers. The project's file is the drill's
``env/compose.yaml``: ``docker compose -f <run>/env/compose.yaml up`` starts the same lab by
hand. ``close`` removes every container, network and volume carrying the project's label;
a watchdog process removes them too if the harness itself is killed before it can.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from mirrordrill.harness.lab.brokers.broker import KafkaBroker, LocalBrokerRunner
from mirrordrill.harness.lab.compose.container import ContainerProcess
from mirrordrill.harness.lab.compose.lab import BrokerImage, broker_service, toxiproxy_service
from mirrordrill.harness.lab.compose.project import ComposeRun
from mirrordrill.harness.lab.compose.spark import SparkDaemonLauncher
from mirrordrill.harness.lab.compose.spec import DRILL_LABEL, Service
from mirrordrill.primitives.bootstrap import Artifacts

if TYPE_CHECKING:  # the docker package is imported when the backend opens
    from mirrordrill.harness.lab.docker.images import ImageSet

NAME = "docker"
# the images a drill's containers need (the replicator and the load run on the host)
DRILL_IMAGES = ("broker", "toxiproxy")
HEADER = ("A mirrordrill drill's lab, written by the docker backend. Start it again by hand with\n"
          "  docker compose -f {file} up -d\n"
          "(brokers keep the data the drill left in their folders; down -v removes the containers).")


def project_name(hint: str) -> str:
    """A Compose project name unique to one drill: lowercase letters, digits and '-'."""
    slug = re.sub(r"[^a-z0-9-]+", "-", hint.lower()).strip("-")[:30] or "lab"
    return f"mirrordrill-{slug}-{uuid.uuid4().hex[:8]}"


class DockerBrokerRunner:
    """Brokers as containers; storage is formatted by a local StorageTool run into the mounted folder."""

    def __init__(self, run: ComposeRun, image: BrokerImage):
        self.run = run
        self.image = image
        self._local = LocalBrokerRunner()

    def process(self, broker: KafkaBroker) -> ContainerProcess:
        service = broker_service(broker, self.image)
        self.run.add(service)
        return ContainerProcess(name=f"kafka broker {broker.name}", service=service.name, run=self.run,
                                log_path=broker.log_path, cwd=broker.workdir)

    def format(self, broker: KafkaBroker) -> None:
        # the folder is the container's own (same path): the host's StorageTool writes what the broker reads
        self._local.format(broker)

    def format_all(self, brokers: Sequence[KafkaBroker]) -> None:
        self._local.format_all(brokers)


class DockerBackend:
    name = NAME

    def __init__(self, hint: str = "lab", log: Callable[[str], None] | None = None, project: str | None = None):
        self.project = project or project_name(hint)
        self.log = log or (lambda m: None)
        self.run: ComposeRun | None = None
        self._images: dict[str, str] = {}
        self._broker_image: BrokerImage | None = None
        self._watchdog: subprocess.Popen | None = None
        self._workdir: Path | None = None
        self._image_set: ImageSet | None = None

    def open(self, workdir: Path) -> None:
        from mirrordrill.harness.lab.docker import images as img
        from mirrordrill.harness.lab.docker.engine import ensure_engine
        engine = ensure_engine(log=self.log)
        use_compose = engine.compose_version() is not None
        if not use_compose:
            self.log("docker backend: no Compose v2 ('docker compose'; ./mirrordrill doctor --docker --fix builds "
                     "it): each container is made with 'docker run' from the same rendering, and compose.yaml is "
                     "still written")
        self._image_set = img.ImageSet(engine, log=self.log)
        self._images = {n: self._image(n) for n in DRILL_IMAGES}
        self._broker_image = BrokerImage(self._images["broker"], img.JAVA, f"{img.KAFKA_LIBS}/*", img.KAFKA_LOG4J)
        self._workdir = Path(workdir)
        self.run = ComposeRun(engine, self.project, workdir, self.log,
                              header=HEADER.format(file=workdir / "compose.yaml"), use_compose=use_compose)
        self._watchdog = _start_watchdog(engine.cli, self.project)
        self.log(f"docker backend: Compose project {self.project} ({workdir / 'compose.yaml'})")

    def _image(self, name: str) -> str:
        """The image's tag, built first when it is missing or stale."""
        images = self._image_set
        assert images is not None, "open() first"
        if images.status(name) != "fresh":
            self.log(f"building the {name} image the docker backend needs (once; ./mirrordrill images build "
                     "does it ahead)")
            images.build(only=[name])
        return images.spec(name).ref

    def spark_launcher(self) -> SparkDaemonLauncher:
        """Spark standalone's daemons as containers; the run folder (the environment's parent) is mounted."""
        from mirrordrill.harness.lab.docker import images as img
        assert self.run is not None and self._workdir is not None, "open() first"
        return SparkDaemonLauncher(self.run, self._image("spark"), img.SPARK_HOME,
                                   str(Path(img.JAVA).parent.parent), f"{img.VENV}/bin/python", self._workdir.parent)

    def broker_runner(self, artifacts: Artifacts, log: Callable[[str], None]) -> DockerBrokerRunner:
        assert self.run is not None and self._broker_image is not None, "open() first"
        return DockerBrokerRunner(self.run, self._broker_image)

    def toxiproxy_process(self, argv: list[str], log_path: Path) -> ContainerProcess:
        assert self.run is not None, "open() first"
        port = int(argv[argv.index("-port") + 1])
        service: Service = toxiproxy_service(self._images["toxiproxy"], port)
        self.run.add(service)
        return ContainerProcess(name="toxiproxy", service=service.name, run=self.run, log_path=log_path,
                                stop_timeout_s=5.0, log_written_by_program=False)

    def close(self) -> list[str]:
        problems = self.run.down() if self.run is not None else []
        if self._watchdog is not None:
            try:
                os.killpg(self._watchdog.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self._watchdog.wait(timeout=5)
            self._watchdog = None
        return problems

    def describe(self) -> dict:
        out = {"backend": self.name, "compose_project": self.project}
        if self.run is not None:
            out["compose_file"] = str(self.run.file)
            out["containers_made_by"] = "docker compose" if self.run.use_compose else "docker run"
        return out


def _start_watchdog(cli: str, project: str) -> subprocess.Popen:
    """A small shell that outlives a SIGKILLed harness and removes the project's containers then.

    The process backend has PDEATHSIG for this; containers are children of the engine, not of
    the harness, so something must watch the harness's pid.
    """
    label = f"label={DRILL_LABEL}={project}"
    script = (f"while kill -0 {os.getpid()} 2>/dev/null; do sleep 2; done; "
              f"ids=$({cli} ps -aq --filter {label}); [ -n \"$ids\" ] && {cli} rm -f -v $ids; "
              f"for k in network volume; do ids=$({cli} $k ls -q --filter {label}); "
              f"[ -n \"$ids\" ] && {cli} $k rm $ids; done; exit 0")
    return subprocess.Popen(["sh", "-c", script], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)


def make_backend(name: str | None, hint: str = "lab", log: Callable[[str], None] | None = None,
                 project: str | None = None):
    """``processes`` (default) or ``docker``; any other name is a usage error naming both."""
    from mirrordrill.harness.lab.environment import ProcessBackend
    if name in (None, "processes"):
        return ProcessBackend()
    if name == NAME:
        return DockerBackend(hint, log, project)
    raise ValueError(f"backend {name!r} is not one of: processes (default), docker")
