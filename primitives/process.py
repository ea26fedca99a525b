"""Processes the harness starts, and the one object that stops them on every exit path."""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from mirrordrill.primitives.redaction import is_secret_key

_PR_SET_PDEATHSIG = 1

# What a broker, Spark, the replicator, a proxy or a load process needs from the user's
# environment: where programs, Java and Python are, locale and time zone, the temporary folder,
# how Spark reaches a YARN or Kubernetes master, and the harness's own settings. Anything else
# (cloud credentials, tokens, a drill's ${env:...} password) stays with the harness, which reads
# it and hands the value on through 0600 files. Runbook commands and a team's own replicator
# command are the exception: they are the team's programs and keep the whole environment.
# Left out on purpose though a setup may use them: JAVA_TOOL_OPTIONS and HTTP(S)_PROXY may carry
# a password (a truststore's, user:pass@host).
_NEEDED = frozenset({
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TZ", "TMPDIR", "LD_LIBRARY_PATH",
    "JAVA_HOME", "PYTHONPATH", "VIRTUAL_ENV", "HADOOP_CONF_DIR", "YARN_CONF_DIR", "HADOOP_USER_NAME", "KUBECONFIG",
    # where a Kerberized YARN or a cloud Kubernetes finds its login (paths and names, not secrets)
    "KRB5CCNAME", "KRB5_CONFIG", "AWS_PROFILE", "AWS_CONFIG_FILE", "AWS_REGION", "CLOUDSDK_CONFIG", "NO_PROXY",
    # read by the processes the harness starts (replicator/, loadgen/, primitives/)
    "MIRRORDRILL_HOME", "MIRRORDRILL_SPARK_LOG_LEVEL", "MIRRORDRILL_SPARK_UI", "MIRRORDRILL_SPARK_DRIVER_MEMORY",
    "MIRRORDRILL_SPARK_CDS", "MIRRORDRILL_REPLICATOR_JARS", "MIRRORDRILL_PLANTED_FAULT", "MIRRORDRILL_MUTATION_SUITE",
})
_NEEDED_PREFIXES = ("LC_", "SPARK_", "PYSPARK_")


def child_environment(extra: Mapping[str, str] | None = None,
                      parent: Mapping[str, str] | None = None) -> dict[str, str]:
    """The allow-listed part of ``parent`` (default: this process's environment) plus ``extra``.

    A secret-looking name (``SPARK_AUTH_SECRET``) is dropped even under an allowed prefix."""
    parent = os.environ if parent is None else parent
    kept = {k: v for k, v in parent.items()
            if (k in _NEEDED or k.startswith(_NEEDED_PREFIXES)) and not is_secret_key(k)}
    return {**kept, **(extra or {})}


def program_path_problem(program: str, base_dir: Path | None, not_on_path_hint: str) -> str | None:
    """Why ``program`` cannot start (None when it can): a bare name must be on PATH (else the
    message ends with ``not_on_path_hint``), a path (relative ones read from ``base_dir``, the
    drill file's folder) must be an executable file."""
    if "/" not in program:
        return None if shutil.which(program) else f"program {program!r} is not on PATH; {not_on_path_hint}"
    path = Path(program) if Path(program).is_absolute() or base_dir is None else base_dir / program
    if not path.is_file():
        return f"program {program} does not exist ({path}); a relative path is read from the drill file's folder"
    if not os.access(path, os.X_OK):
        return f"program {program} is not executable; chmod +x {path}"
    return None


def _die_with_parent() -> None:
    # If the harness itself is SIGKILLed, the kernel kills the child too: no orphan JVMs.
    # (PDEATHSIG fires when the *thread* that forked exits, so processes are started from
    # the main thread or long-lived threads only.)
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except OSError:
        pass
    # A new process group, so a terminal's Ctrl-C reaches the harness only; the harness then
    # stops its children in order and still writes what it measured.
    os.setpgid(0, 0)


class ProcessError(RuntimeError):
    """A managed process failed to start or died; the message points at its log."""


@dataclass
class ManagedProcess:
    """One child process with its log file; stop/kill/pause/resume act on its process group."""

    name: str
    argv: Sequence[str]
    log_path: Path
    # None: child_environment(), the allow-listed part of the user's environment; a caller that
    # needs more builds it with child_environment(extra) (or, for the team's own programs, whole).
    env: dict[str, str] | None = None
    cwd: Path | None = None
    stop_timeout_s: float = 20.0
    # Infrastructure (brokers, proxies) stops after everything else, so clients such as a
    # replicator shut down cleanly instead of hanging on brokers that vanished under them.
    infrastructure: bool = False
    _popen: subprocess.Popen[bytes] | None = field(default=None, init=False, repr=False)
    _log_fh: IO[bytes] | None = field(default=None, init=False, repr=False)
    paused: bool = field(default=False, init=False)
    # stop, kill or terminate was called since the last start: an exit after it was asked for, not a crash
    stop_asked: bool = field(default=False, init=False)

    def start(self) -> None:
        """Start the process (appending to its log, so restarts keep earlier output)."""
        if self.running:
            raise ProcessError(f"{self.name} is already running (pid {self.pid})")
        self.stop_asked = False
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._close_log()
        self._log_fh = open(self.log_path, "ab", buffering=0)
        self._log_fh.write(f"\n===== mirrordrill: starting {self.name}: {' '.join(map(str, self.argv))}\n".encode())
        self._popen = subprocess.Popen(
            [str(a) for a in self.argv], stdout=self._log_fh, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, env=child_environment() if self.env is None else self.env, cwd=self.cwd,
            preexec_fn=_die_with_parent,
        )
        self.paused = False

    @property
    def pid(self) -> int | None:
        return self._popen.pid if self._popen else None

    @property
    def _started(self) -> subprocess.Popen[bytes]:
        """The process, once started (callers check ``running`` first)."""
        if self._popen is None:
            raise RuntimeError(f"{self.name} was never started")
        return self._popen

    @property
    def running(self) -> bool:
        return self._popen is not None and self._popen.poll() is None

    @property
    def returncode(self) -> int | None:
        return self._popen.poll() if self._popen else None

    @property
    def exited_unasked(self) -> int | None:
        """The exit code of a process that ended with nobody asking it to (a crash; negative: the signal)."""
        code = self.returncode
        return None if code is None or self.stop_asked else code

    def _signal(self, sig: int) -> None:
        """Signal the whole process group (pause, resume and kill act on every child too)."""
        if self._popen is not None:
            try:
                os.killpg(self._popen.pid, sig)
            except ProcessLookupError:
                pass

    def terminate(self, sig: int = signal.SIGTERM) -> None:
        """SIGTERM (or ``sig``) to the process itself: it shuts its own children down in order (e.g.
        the replicator stops its Spark queries before Spark's JVM goes)."""
        self.stop_asked = True
        if self.running:
            try:
                os.kill(self._started.pid, sig)
            except ProcessLookupError:
                pass

    def _group_alive(self) -> bool:
        try:
            os.killpg(self._started.pid, 0)
            return True
        except (ProcessLookupError, PermissionError):
            return False

    def reap_group(self, grace_s: float = 5.0) -> None:
        """After the process exited, give its children ``grace_s`` to follow, then SIGKILL them."""
        if self._popen is None:
            return
        deadline = time.monotonic() + grace_s
        while self._group_alive() and time.monotonic() < deadline:
            time.sleep(0.1)
        if self._group_alive():
            self._signal(signal.SIGKILL)

    def stop(self, timeout_s: float | None = None, sig: int = signal.SIGTERM) -> None:
        """SIGTERM (or ``sig``, a stop the process knows another way to do), then SIGKILL after the
        grace period; a no-op when not running."""
        self.stop_asked = True
        if not self.running:
            self._close_log()
            return
        if self.paused:  # a stopped process cannot act on SIGTERM
            self._signal(signal.SIGCONT)
            self.paused = False
        self.terminate(sig)
        try:
            self._started.wait(timeout=self.stop_timeout_s if timeout_s is None else timeout_s)
        except subprocess.TimeoutExpired:
            self.kill()
        self.reap_group()
        self._close_log()

    def kill(self) -> None:
        """SIGKILL the whole process group and reap it."""
        self.stop_asked = True
        if self._popen is None:
            return
        self._signal(signal.SIGKILL)
        try:
            self._popen.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        self.paused = False
        self._close_log()

    def pause(self) -> None:
        """SIGSTOP: a frozen process (long GC pause, frozen VM), distinct from a crash."""
        self._signal(signal.SIGSTOP)
        self.paused = True

    def resume(self) -> None:
        self._signal(signal.SIGCONT)
        self.paused = False

    def wait(self, timeout_s: float | None = None) -> int | None:
        if self._popen is None:
            return None
        try:
            return self._popen.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return None

    def log_tail(self, lines: int = 30) -> str:
        """The last lines of the log, for error messages."""
        try:
            data = self.log_path.read_bytes()[-64 * 1024:]
        except OSError:
            return ""
        return "\n".join(data.decode(errors="replace").splitlines()[-lines:])

    def _close_log(self) -> None:
        if self._log_fh is not None and (self._popen is None or self._popen.poll() is not None):
            self._log_fh.close()
            self._log_fh = None


class ProcessSupervisor:
    """Owns every process of one environment and stops them all, newest first."""

    def __init__(self) -> None:
        self._procs: list[ManagedProcess] = []
        self._lock = threading.Lock()

    def add(self, proc: ManagedProcess) -> ManagedProcess:
        with self._lock:
            self._procs.append(proc)
        return proc

    def remove(self, proc: ManagedProcess) -> None:
        with self._lock:
            if proc in self._procs:
                self._procs.remove(proc)

    @property
    def processes(self) -> list[ManagedProcess]:
        with self._lock:
            return list(self._procs)

    def stop_all(self, timeout_s: float = 20.0) -> list[str]:
        """Stop clients, then infrastructure (SIGTERM in parallel, SIGKILL stragglers); returns problems."""
        procs = list(reversed(self.processes))
        problems = self._stop_group([p for p in procs if not p.infrastructure], timeout_s)
        return problems + self._stop_group([p for p in procs if p.infrastructure], timeout_s)

    @staticmethod
    def _stop_group(procs: list[ManagedProcess], timeout_s: float) -> list[str]:
        problems: list[str] = []
        for p in procs:
            if p.paused:
                p.resume()
            p.terminate()
        deadline = time.monotonic() + timeout_s
        for p in procs:
            remaining = max(0.1, deadline - time.monotonic())
            if p.wait(remaining) is None and p.running:
                problems.append(f"{p.name} ignored SIGTERM for {timeout_s:.0f}s; killed")
                p.kill()
            p.reap_group()
            p._close_log()
        return problems
