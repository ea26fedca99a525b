"""A rendered Compose project run with ``docker compose -p <project>``, and its removal by label.

The file is rewritten whenever a service is added (brokers come after Toxiproxy; a failback
adds nothing, but a later feature may), and a service's first start is ``compose up`` for
that service alone. Removal is ``compose down`` plus a sweep by the project's label, so a
container whose service left the file, or a half-created one, goes too.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

from mirrordrill.harness.lab.compose.spec import DRILL_LABEL, ComposeProject, Service, compose_yaml

COMPOSE_FILE = "compose.yaml"
COMPOSE_PROJECT_LABEL = "com.docker.compose.project"


class DockerCli(Protocol):
    """What this module needs of a Docker engine (``harness.lab.docker.engine.Engine``)."""

    @property
    def cli(self) -> str: ...

    def run(self, args: Sequence[str], *, check: bool = True, timeout: float | None = 120,
            **kwargs) -> subprocess.CompletedProcess: ...


class ComposeRun:
    """One Compose project on the engine: its file in ``folder``, its containers, their removal."""

    def __init__(self, engine: DockerCli, name: str, folder: Path, log: Callable[[str], None] | None = None,
                 configs: tuple[tuple[str, str], ...] = (), header: str = "", use_compose: bool = True):
        self.engine = engine
        # without Compose v2 each container is made with ``docker run`` from the same service (the file
        # is still written); configs need Compose, so a project with configs requires it
        self.use_compose = use_compose
        self.name = name
        self.folder = Path(folder)
        self.file = self.folder / COMPOSE_FILE
        self.log = log or (lambda m: None)
        self._services: dict[str, Service] = {}
        self._configs = configs
        self._header = header

    @property
    def project(self) -> ComposeProject:
        return ComposeProject(self.name, tuple(self._services.values()), self._configs, self._header)

    def add(self, service: Service) -> str:
        """Add a service (written at its first start); returns its container's name."""
        self._services[service.name] = service
        return self.project.container_name(service.name)

    def write(self) -> Path:
        self.folder.mkdir(parents=True, exist_ok=True)
        self.file.write_text(compose_yaml(self.project))
        return self.file

    def compose(self, *args: str, timeout: float = 180) -> subprocess.CompletedProcess:
        return self.engine.run(["compose", "-p", self.name, "-f", str(self.file), *args], timeout=timeout)

    def start(self, service: str) -> None:
        """Start a service's container: created by ``compose up`` the first time, ``docker start`` after."""
        container = self.project.container_name(service)
        if self.state(container) is None:
            self.write()
            if self.use_compose:
                self.compose("up", "-d", "--no-deps", "--no-recreate", service)
            else:
                self.engine.run(docker_run_argv(self.project, self._services[service]), timeout=180)
        else:
            self.engine.run(["start", container])

    def state(self, container: str) -> dict | None:
        """``State`` of ``docker inspect`` (Running, Paused, Pid, ExitCode), or None when there is no such container."""
        proc = self.engine.run(["container", "inspect", "--format", "{{json .State}}", container], check=False, timeout=30)
        if proc.returncode != 0:
            return None
        return json.loads(proc.stdout)

    def containers(self) -> list[str]:
        """Every container carrying this project's label, running or not."""
        proc = self.engine.run(["ps", "-aq", "--filter", f"label={DRILL_LABEL}={self.name}"], check=False)
        return proc.stdout.split()

    def save_logs(self, container: str, path: Path) -> None:
        """``docker logs`` of a container whose program writes no log file of its own (Toxiproxy is FROM scratch)."""
        proc = self.engine.run(["logs", container], check=False, timeout=60)
        if proc.returncode == 0:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(proc.stdout + proc.stderr)

    def down(self) -> list[str]:
        """Remove every container, network and volume of the project; returns what could not be removed."""
        problems: list[str] = []
        if self.file.exists() and self.use_compose:
            proc = self.engine.run(["compose", "-p", self.name, "-f", str(self.file), "down", "--volumes",
                                    "--remove-orphans", "--timeout", "10"], check=False, timeout=180)
            if proc.returncode != 0:
                problems.append(f"docker compose down of {self.name}: {proc.stderr.strip()[-500:]}")
        left = self.containers()
        if left:
            self.engine.run(["rm", "-f", "-v", *left], check=False, timeout=120)
        # ours by label, and whatever Compose made for the project (it labels its own networks so)
        for label in (f"label={DRILL_LABEL}={self.name}", f"label={COMPOSE_PROJECT_LABEL}={self.name}"):
            for kind in ("network", "volume"):
                ids = self.engine.run([kind, "ls", "-q", "--filter", label], check=False).stdout.split()
                if ids:
                    self.engine.run([kind, "rm", *ids], check=False, timeout=60)
        still = self.containers()
        if still:
            problems.append(f"containers of {self.name} still present after removal: {still}")
        return problems


def docker_run_argv(project: ComposeProject, s: Service) -> list[str]:
    """``docker run`` of one service as ``compose up`` would create it (bind mounts and environment only)."""
    if s.configs or any(m.volume for m in s.mounts):
        raise ValueError(f"service {s.name} uses configs or named volumes: it needs Compose v2")
    argv = ["run", "-d", "--name", project.container_name(s.name), "--network", "host"]
    for k, v in project.labels(s.role).items():
        argv += ["--label", f"{k}={v}"]
    for m in s.mounts:
        argv += ["-v", m.render()]
    for k, v in s.environment:
        argv += ["-e", f"{k}={v}"]
    if s.working_dir:
        argv += ["-w", s.working_dir]
    if s.stop_grace_s is not None:
        argv += ["--stop-timeout", str(s.stop_grace_s)]
    return [*argv, s.image, *s.command]
