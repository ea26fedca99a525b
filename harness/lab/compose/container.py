"""One container made to look like a supervised process, so brokers and proxies keep their lifecycle.

The environment's supervisor, the clusters and the fault steps call the same methods as on a
``ManagedProcess``: start, stop (SIGTERM, SIGKILL after the grace period), kill (SIGKILL),
pause and resume (the cgroup freezer: ``docker pause``), running, log_tail. The engine does
each one: ``docker kill --signal``, ``docker stop``, ``docker pause``/``unpause``.
"""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from mirrordrill.harness.lab.compose.project import ComposeRun

PAUSE_TRIES = 4


@dataclass
class ContainerProcess:
    name: str
    service: str
    run: ComposeRun
    log_path: Path
    infrastructure: bool = True
    stop_timeout_s: float = 20.0
    log_written_by_program: bool = True  # False: the log file is ``docker logs``, saved at stop
    paused: bool = field(default=False, init=False)
    stop_asked: bool = field(default=False, init=False)  # as ManagedProcess's: set by stop, kill, terminate
    _frozen_by: str | None = field(default=None, init=False, repr=False)  # "pause" or "SIGSTOP"
    _signalling: subprocess.Popen | None = field(default=None, init=False, repr=False)  # terminate's engine call
    cwd: Path | None = None
    argv: tuple[str, ...] = ()

    @property
    def container(self) -> str:
        return self.run.project.container_name(self.service)

    def _docker(self, *args: str, check: bool = True) -> None:
        self.run.engine.run(list(args), check=check, timeout=60)

    def _state(self) -> dict:
        return self.run.state(self.container) or {}

    def start(self) -> None:
        self.stop_asked = False
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self.run.start(self.service)
        self.paused = False

    @property
    def running(self) -> bool:
        return bool(self._state().get("Running"))

    @property
    def pid(self) -> int | None:
        return self._state().get("Pid") or None

    @property
    def returncode(self) -> int | None:
        st = self._state()
        return None if not st or st.get("Running") else st.get("ExitCode")

    @property
    def exited_unasked(self) -> int | None:
        code = self.returncode
        return None if code is None or self.stop_asked else code

    def terminate(self) -> None:
        # Sent without waiting for the engine's answer (reaped in reap_group): the supervisor SIGTERMs a
        # whole cluster at once, and a CLI round trip per broker (a second or more on a loaded machine)
        # left the last voter of a three-broker KRaft quorum alone, unable to finish its controlled
        # shutdown, until it was SIGKILLed 20 s later. A container already stopped just makes it fail.
        self.stop_asked = True
        self._signalling = subprocess.Popen([self.run.engine.cli, "kill", "--signal", "SIGTERM", self.container],
                                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def stop(self, timeout_s: float | None = None) -> None:
        """``docker stop``: SIGTERM, SIGKILL after the grace period."""
        self.stop_asked = True
        if self.paused:
            self.resume()
        grace = self.stop_timeout_s if timeout_s is None else timeout_s
        self.run.engine.run(["stop", "--time", str(int(grace)), self.container], check=False, timeout=grace + 60)
        self._close_log()

    def kill(self) -> None:
        """SIGKILL (a paused container is thawed first: the engine refuses to signal a frozen one)."""
        self.stop_asked = True
        if self.paused:
            self.resume()
        if self.running:
            self._docker("kill", "--signal", "SIGKILL", self.container, check=False)
        self.wait(10)
        self._close_log()

    def pause(self) -> None:
        """``docker pause`` (the cgroup freezer). On a heavily loaded machine the freezer can give up
        ("unable to freeze"); after a few tries the container's program is stopped with SIGSTOP
        instead, which is what the process backend does to a local process."""
        for attempt in range(PAUSE_TRIES):
            proc = self.run.engine.run(["pause", self.container], check=False, timeout=60)
            if proc.returncode == 0:
                self._frozen_by = "pause"
                self.paused = True
                return
            time.sleep(0.5 * (attempt + 1))
        self._docker("kill", "--signal", "SIGSTOP", self.container)
        self._frozen_by = "SIGSTOP"
        self.paused = True

    def resume(self) -> None:
        if self._frozen_by == "SIGSTOP":
            self._docker("kill", "--signal", "SIGCONT", self.container, check=False)
        else:
            self._docker("unpause", self.container, check=False)
        self._frozen_by = None
        self.paused = False

    def wait(self, timeout_s: float | None = None) -> int | None:
        deadline = time.monotonic() + (timeout_s if timeout_s is not None else 3600)
        while time.monotonic() < deadline:
            st = self._state()
            if not st.get("Running"):
                return st.get("ExitCode", 0)
            time.sleep(0.2)
        return None

    def reap_group(self, grace_s: float = 5.0) -> None:
        """The container's processes end with it; only the engine call that signalled it is reaped."""
        if self._signalling is not None:
            try:
                self._signalling.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                self._signalling.kill()
                self._signalling.wait()
            self._signalling = None

    def log_tail(self, lines: int = 30) -> str:
        if self.log_written_by_program:
            try:
                data = self.log_path.read_bytes()[-64 * 1024:]
                return "\n".join(data.decode(errors="replace").splitlines()[-lines:])
            except OSError:
                pass
        proc = self.run.engine.run(["logs", "--tail", str(lines), self.container], check=False, timeout=30)
        return (proc.stdout + proc.stderr).strip()

    def _close_log(self) -> None:
        if not self.log_written_by_program:
            self.run.save_logs(self.container, self.log_path)
