"""A reachable Docker engine: found, or (as root with apt) installed from Debian and started.

No image registry is reachable from these machines, so nothing here ever pulls; images are
built locally (``harness.lab.docker.images``). One engine serves every mirrordrill process on
the machine: starting it is guarded by a file lock, and a running engine is never restarted.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from mirrordrill.primitives.bootstrap import Bootstrap, BootstrapError, mirrordrill_home

SOCKET = Path("/var/run/docker.sock")
START_TIMEOUT_S = 60.0
# Compose v2 is not packaged by Debian (only compose v1.29): built from its Go module once.
COMPOSE_MODULE = "github.com/docker/compose/v2"
COMPOSE_VERSION = "v2.40.3"
COMPOSE_PLUGIN = Path.home() / ".docker" / "cli-plugins" / "docker-compose"

FIX_ENGINE = "./mirrordrill doctor --fix"


class EngineError(RuntimeError):
    """No Docker engine can be reached or started; the message names the fix."""


@dataclass(frozen=True)
class Engine:
    """A Docker CLI that reaches a running engine."""

    cli: str
    server_version: str

    def run(self, args: Sequence[str], *, check: bool = True, timeout: float | None = 120,
            **kwargs) -> subprocess.CompletedProcess:
        """``docker ARGS``, output captured as text; a failure raises EngineError with stderr."""
        proc = subprocess.run([self.cli, *args], capture_output=True, text=True, timeout=timeout, **kwargs)
        if check and proc.returncode != 0:
            raise EngineError(f"docker {' '.join(args[:3])} failed (exit {proc.returncode}): "
                              f"{(proc.stderr or proc.stdout).strip()[-2000:]}")
        return proc

    def inspect_image(self, ref: str) -> dict | None:
        """The image's ``docker image inspect`` record, or None when it is not present."""
        proc = self.run(["image", "inspect", ref], check=False)
        if proc.returncode != 0:
            return None
        return json.loads(proc.stdout)[0]

    def compose_version(self) -> str | None:
        """``docker compose version`` (v2 as a CLI plugin), or None when the plugin is missing."""
        proc = self.run(["compose", "version", "--short"], check=False, timeout=30)
        out = proc.stdout.strip()
        return out if proc.returncode == 0 and out and out[0].isdigit() else None


def _cli_candidates() -> list[str]:
    # The CLI on PATH first (this machine has a v28 CLI in /usr/local/bin), then Debian's.
    found = [shutil.which("docker"), "/usr/bin/docker"]
    return [c for i, c in enumerate(found) if c and Path(c).exists() and c not in found[:i]]


def find_engine() -> Engine | None:
    """An engine that answers now, or None."""
    for cli in _cli_candidates():
        try:
            proc = subprocess.run([cli, "version", "--format", "{{.Server.Version}}"],
                                  capture_output=True, text=True, timeout=20)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if proc.returncode == 0 and proc.stdout.strip():
            return Engine(cli=cli, server_version=proc.stdout.strip())
    return None


def dockerd_log() -> Path:
    return mirrordrill_home() / "logs" / "dockerd.log"


def ensure_engine(install: bool = True, log: Callable[[str], None] | None = None) -> Engine:
    """A reachable engine; when there is none and ``install``: as root with apt, install
    Debian's docker.io and start ``dockerd``. Otherwise EngineError naming the fix."""
    engine = find_engine()
    if engine:
        return engine
    boot = Bootstrap(log=log)
    if not install:
        raise EngineError(f"no Docker engine answers (docker version failed). Fix: {FIX_ENGINE} "
                          "(as root with apt it installs docker.io and starts dockerd), or start your engine.")
    with boot._lock("dockerd"):
        engine = find_engine()
        if engine:
            return engine
        if not shutil.which("dockerd"):
            _install_docker_io(boot)
        _start_dockerd(boot)
        return _wait_for_engine()


def _install_docker_io(boot: Bootstrap) -> None:
    try:
        boot.can_apt_install("")
    except BootstrapError:
        raise EngineError("no Docker engine answers and this process cannot install one (it needs root and "
                          "apt-get). Fix: install and start Docker (Debian: sudo apt-get install -y docker.io "
                          "&& sudo systemctl start docker), or point DOCKER_HOST at a running engine.") from None
    boot.apt_install("docker.io", why="the Docker engine (~20 s)", recommends=True)


def _start_dockerd(boot: Bootstrap) -> None:
    dockerd = shutil.which("dockerd")
    if dockerd is None:
        raise EngineError("docker.io is installed but 'dockerd' is not on PATH; reinstall docker.io "
                          "(apt-get install --reinstall docker.io).")
    log_path = dockerd_log()
    log_path.parent.mkdir(parents=True, exist_ok=True)
    boot.log(f"starting dockerd (log: {log_path})")
    with open(log_path, "ab") as fh:
        # Detached on purpose: the engine is machine-wide and outlives this process, like a
        # system service; other drills and test sessions use the same one.
        subprocess.Popen([dockerd], stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                         start_new_session=True, close_fds=True)


def _wait_for_engine() -> Engine:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        engine = find_engine()
        if engine:
            return engine
        time.sleep(0.5)
    raise EngineError(f"dockerd did not answer within {START_TIMEOUT_S:.0f}s; see {dockerd_log()} "
                      "(a stale /var/run/docker.pid or a missing kernel feature are common causes).")


def compose_plugin_build(boot: Bootstrap) -> Path:
    """Build Compose v2 from its Go module (once, 4-5 min) and install it as the CLI plugin.

    ``go install module@version`` refuses Compose (its go.mod has exclude directives), so the
    module is downloaded and built in a copy of its source."""
    dest = boot.home / "compose" / COMPOSE_VERSION
    binary = dest / "docker-compose"
    if not (dest / ".complete").exists():
        with boot._lock("compose"):
            if not (dest / ".complete").exists():
                _build_compose(boot, dest, binary)
    COMPOSE_PLUGIN.parent.mkdir(parents=True, exist_ok=True)
    if not COMPOSE_PLUGIN.exists() or COMPOSE_PLUGIN.resolve() != binary.resolve():
        COMPOSE_PLUGIN.unlink(missing_ok=True)
        COMPOSE_PLUGIN.symlink_to(binary)
    return COMPOSE_PLUGIN


def _build_compose(boot: Bootstrap, dest: Path, binary: Path) -> None:
    go = shutil.which("go")
    if go is None:
        raise EngineError("Compose v2 is built from its Go module and 'go' is not on PATH. "
                          "Install Go 1.24+ (https://go.dev/doc/install) and rerun.")
    boot.log(f"building Compose {COMPOSE_VERSION} (Go, once; 4-5 min) into {dest}")
    env = dict(os.environ, CGO_ENABLED="0", GOFLAGS="-mod=mod")
    env.setdefault("GOTOOLCHAIN", "local")
    proc = subprocess.run([go, "mod", "download", "-json", f"{COMPOSE_MODULE}@{COMPOSE_VERSION}"],
                          capture_output=True, text=True, env=env, cwd=tempfile.gettempdir())
    if proc.returncode != 0:
        raise EngineError(f"go mod download of {COMPOSE_MODULE}@{COMPOSE_VERSION} failed: {proc.stdout}{proc.stderr}"
                          " Check that the Go module proxy is reachable, then rerun.")
    src_dir = Path(json.loads(proc.stdout)["Dir"])
    work = Path(tempfile.mkdtemp(prefix=".compose-", dir=boot._ensure(dest.parent)))
    try:
        shutil.copytree(src_dir, work / "src")
        for p in (work / "src").rglob("*"):  # the module cache is read-only
            p.chmod(p.stat().st_mode | 0o200)
        # The version is stamped by the linker, as compose's own Makefile does (else it says "dev").
        ldflags = f"-s -w -X {COMPOSE_MODULE}/internal.Version={COMPOSE_VERSION}"
        boot._run([go, "build", "-trimpath", "-ldflags", ldflags, "-o", str(work / "docker-compose"), "./cmd"],
                  "go build (compose)",
                  "Check that the Go module proxy is reachable and Go is 1.24+, then rerun.", env=env,
                  cwd=work / "src")
        dest.mkdir(parents=True, exist_ok=True)
        (work / "docker-compose").replace(binary)
        (dest / ".complete").touch()
    finally:
        shutil.rmtree(work, ignore_errors=True)
