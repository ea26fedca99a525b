"""The harness side of a load process: start it, stop it, find its histories and stats.

The load runs in its own Python process (``loadgen.load_process``) because Locust patches
its process with gevent; this module imports neither Locust nor gevent.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import sys
import time
from pathlib import Path

from pydantic import ValidationError

from mirrordrill.loadgen.histories.kinds import ACKED_SENDS, UNCERTAIN_SENDS, history_path
from mirrordrill.loadgen.spec import LoadSpec, LoadStats
from mirrordrill.primitives.import_root import child_pythonpath
from mirrordrill.primitives.process import ManagedProcess, ProcessError, ProcessSupervisor, child_environment


class LoadRunner:
    """One load process as a ``ManagedProcess``; each ``start()`` is a new instance.

    Give it the environment's ``supervisor`` so that the process is stopped on every exit
    path of the drill. Call ``start()`` from the main thread or a long-lived thread (the
    child dies with the thread that forked it).
    """

    def __init__(self, spec: LoadSpec, workdir: str | os.PathLike[str], name: str | None = None,
                 supervisor: ProcessSupervisor | None = None, python: str = sys.executable,
                 start_timeout_s: float = 60.0) -> None:
        self.workdir = Path(workdir).resolve()
        out = Path(spec.output_dir)
        self.spec = spec.model_copy(update={"output_dir": out if out.is_absolute()
                                            else self.workdir / out})
        self.name = name or f"load-{spec.cluster}-{spec.producer_id_prefix}"
        self.supervisor = supervisor
        self.python = python
        # a master waits for its workers to join before it is held or produces
        self.start_timeout_s = start_timeout_s + (spec.worker_join_timeout_s if spec.worker_count else 0.0)
        self.instance: str | None = None
        self.ledger_paths: list[Path] = []
        self.uncertain_paths: list[Path] = []
        self._proc: ManagedProcess | None = None

    # --- paths ---------------------------------------------------------------------------
    @property
    def log_path(self) -> Path:
        return self.workdir / f"{self.name}.log"

    @property
    def stats_path(self) -> Path | None:
        """The stats summary of the current (or last) instance."""
        if self.instance is None:
            return None
        return self.spec.output_dir / f"load-stats.{self.spec.writer_tag(self.instance)}.json"

    @property
    def ledger_path(self) -> Path | None:
        """The ledger of the current (or last) instance."""
        return self.ledger_paths[-1] if self.ledger_paths else None

    @property
    def uncertain_path(self) -> Path | None:
        return self.uncertain_paths[-1] if self.uncertain_paths else None

    # --- lifecycle -----------------------------------------------------------------------
    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.running

    @property
    def returncode(self) -> int | None:
        return self._proc.returncode if self._proc else None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def start(self, wait: bool = True) -> None:
        """Start a new instance (new producer ids, new history files); by default wait
        until it produces."""
        if self.running:
            raise ProcessError(f"{self.name} is already running (pid {self.pid})")
        self.instance = f"{int(time.time()) % 100000:05d}{secrets.token_hex(3)}"
        spec = self.spec.model_copy(update={"instance": self.instance})
        tag = spec.writer_tag(self.instance)
        self.workdir.mkdir(parents=True, exist_ok=True)
        spec.output_dir.mkdir(parents=True, exist_ok=True)
        spec_path = spec.dump(self.workdir / f"{self.name}.{self.instance}.spec.json")
        # a distributed load's master writes each worker's histories under the worker's own instance
        tags = [spec.writer_tag(spec.worker_instance(k)) for k in range(spec.worker_count)] or [tag]
        self.ledger_paths.extend(history_path(spec.output_dir, ACKED_SENDS, t) for t in tags)
        self.uncertain_paths.extend(history_path(spec.output_dir, UNCERTAIN_SENDS, t) for t in tags)
        env = child_environment()
        env["PYTHONPATH"] = child_pythonpath(env.get("PYTHONPATH"))
        env.pop("LOCUST_SKIP_MONKEY_PATCH", None)
        if self._proc is not None and self.supervisor is not None:
            self.supervisor.remove(self._proc)
        self._proc = ManagedProcess(
            name=self.name,
            argv=[self.python, "-m", "mirrordrill.loadgen.load_process", "--spec", str(spec_path)],
            log_path=self.log_path, env=env, cwd=self.workdir,
            # SIGTERM grace: the process waits flush_timeout_s for acks, then writes stats.
            stop_timeout_s=spec.flush_timeout_s + 20.0)
        if self.supervisor is not None:
            self.supervisor.add(self._proc)
        self._proc.start()
        if wait:
            self.wait_running()

    def wait_running(self) -> None:
        """Block until this instance produces (after ``start(wait=False)``); ProcessError if it cannot."""
        self._wait_for(("running", "stopping", "stopped"), "producing")

    def wait_held(self) -> None:
        """Block until a held instance (a spec with ``start_signal``) waits for its signal, or produces already."""
        self._wait_for(("held", "running", "stopping", "stopped"), "waiting for its start signal")

    def _wait_for(self, states: tuple[str, ...], what: str) -> None:
        deadline = time.monotonic() + self.start_timeout_s
        while time.monotonic() < deadline:
            stats = self.stats()
            if stats is not None and stats.state in states:
                return
            if not self.running:
                raise ProcessError(f"{self.name} exited (code {self.returncode}) before {what}; "
                                   f"log {self.log_path}:\n{self._log_tail()}")
            time.sleep(0.1)
        self.kill()
        raise ProcessError(f"{self.name} was not {what} within {self.start_timeout_s:.0f}s; "
                           f"log {self.log_path}:\n{self._log_tail()}")

    def _log_tail(self) -> str:
        """The end of the process's log, for an error message ("" before it was started)."""
        return self._proc.log_tail() if self._proc else ""

    def wait(self, timeout_s: float | None = None) -> int | None:
        """Wait for a duration-bound run to end; its exit code, or None on timeout."""
        return self._proc.wait(timeout_s) if self._proc else None

    def stop(self, timeout_s: float | None = None) -> LoadStats | None:
        """SIGTERM (the process drains its producers), SIGKILL after the grace period."""
        if self._proc is not None:
            self._proc.stop(timeout_s)
        return self.stats()

    def abandon(self, timeout_s: float | None = None) -> LoadStats | None:
        """SIGUSR1: its cluster is lost. The process stops at once without waiting for acks (its
        pending sends are recorded as uncertain) and is gone when this returns.

        An unplanned failover abandons the lost site's producers before the stable address moves
        to DR: a producer that drained on SIGTERM went on retrying, found the address pointing at
        DR and delivered its retries there under a producer id of the lost cluster. DR's broker
        took them, and DR's own first idempotent producer, given the same id by DR, was refused
        as out of sequence and produced nothing (active-passive-failback with MM2;
        see docs/measurements/behind-the-code.md#loadgen-runner-py)."""
        if self._proc is not None:
            self._proc.stop(timeout_s, sig=signal.SIGUSR1)
        return self.stats()

    def kill(self) -> None:
        """SIGKILL: a crash of the load process (acks not yet in the ledger are lost)."""
        if self._proc is not None:
            self._proc.kill()

    def stats(self) -> LoadStats | None:
        """The latest stats the process wrote (final once it has stopped), or None."""
        path = self.stats_path
        if path is None:
            return None
        try:
            return LoadStats.model_validate(json.loads(path.read_text()))
        except FileNotFoundError:
            return None
        except (ValueError, ValidationError) as e:  # replaced atomically, so never torn
            raise ProcessError(f"{self.name}: unreadable stats {path}: {e}") from None

    def __enter__(self) -> LoadRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"LoadRunner({self.name!r}, instance={self.instance!r}, running={self.running})"
