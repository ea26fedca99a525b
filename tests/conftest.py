"""Test-session plumbing: the shared artifact cache and the orphan-process guard (the options are in ../conftest.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from mirrordrill.primitives.import_root import IMPORT_ROOT

# The order in which the modules start. The suite's parallel part (tests/suite.py) hands whole
# modules to its workers in this order (--no-loadscope-reorder: xdist's own reorder puts the modules
# with the most tests first, so the long one-test modules started last and ran beside idle
# workers). The modules measured longest start first, longest first; then the rest by folder, the
# integration modules before the many short unit modules that fill the workers' ends.
_FOLDER_ORDER = ("tests/integration", "tests/containers", "tests/drills", "tests/mutants", "tests/unit")
_MODULE_SECONDS = Path(__file__).resolve().parents[1] / "docs" / "measurements" / "suite-module-seconds.json"


def module_start_order(paths: list[str], measured: dict[str, float]) -> dict[str, tuple[int, float]]:
    """Each module path's rank: measured modules first (longest first), then by folder."""
    def rank(path: str) -> tuple[int, float]:
        if path in measured:
            return (0, -measured[path])
        return (1, next((i for i, folder in enumerate(_FOLDER_ORDER) if path.startswith(folder + "/")),
                        len(_FOLDER_ORDER)))
    return {path: rank(path) for path in paths}


def pytest_collection_modifyitems(config, items):
    measured = json.loads(_MODULE_SECONDS.read_text())["figures"]["modules"]
    ranks = module_start_order(sorted({item.nodeid.split("::", 1)[0] for item in items}), measured)
    items.sort(key=lambda item: ranks[item.nodeid.split("::", 1)[0]])  # stable: a module's own order is pytest's


@dataclass(frozen=True)
class LabBackend:
    """``--backend``: where the clusters a test starts run. Each environment gets its own backend
    object (a docker one is one Compose project, removed when the environment stops)."""

    name: str

    def make(self, hint: str):
        from mirrordrill.harness.lab.compose.backend import make_backend
        return make_backend(self.name, hint, lambda m: print(f"mirrordrill: {m}", file=sys.stderr, flush=True))


@pytest.fixture(scope="session")
def lab_backend(request) -> LabBackend:
    return LabBackend(request.config.getoption("--backend"))


@pytest.fixture(scope="session")
def artifacts():
    """Every installed artifact (installed on first use, from the cache afterwards)."""
    from mirrordrill.primitives.bootstrap import Bootstrap
    return Bootstrap().ensure_all(with_allure=False)


@pytest.fixture(scope="session")
def session_workdir(tmp_path_factory) -> Path:
    """Root of every process's working folder in this session (the orphan guard looks here)."""
    return tmp_path_factory.getbasetemp()


def processes_under(root: Path) -> list[tuple[int, str]]:
    """Live processes whose working directory is inside ``root``: the ones our tests started."""
    root = str(root.resolve())
    found = []
    for pid_dir in Path("/proc").iterdir():
        if not pid_dir.name.isdigit() or int(pid_dir.name) == os.getpid():
            continue
        try:
            cwd = os.readlink(pid_dir / "cwd")
            if cwd == root or cwd.startswith(root + os.sep):
                cmd = (pid_dir / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                found.append((int(pid_dir.name), cmd[:200]))
        except OSError:
            continue
    return found


def read_until(proc, marker: str, timeout_s: float) -> list[str]:
    """The lines a subprocess printed until one held ``marker`` (or its output ended, or time ran out)."""
    lines: list[str] = []
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        if marker in line:
            break
    return lines


def up_secure_clusters(tmp_path: Path, password: str) -> tuple[subprocess.Popen, Path, Path, list[str]]:
    """``mirrordrill up scenarios/secure-failover.yaml --connection-file`` as a user runs it: the
    process, its workdir, the connection file, and its output until the clusters are up. The
    caller stops it (SIGINT) and kills it on failure."""
    repo = Path(__file__).resolve().parents[1]
    workdir, conn = tmp_path / "up", tmp_path / "connection.yaml"
    env = dict(os.environ, PYTHONPATH=str(IMPORT_ROOT), MIRRORDRILL_SECURE_PASSWORD=password)
    proc = subprocess.Popen([sys.executable, "-m", "mirrordrill.harness.cli.commands", "up", str(repo / "scenarios" / "secure-failover.yaml"),
                             "--workdir", str(workdir), "--connection-file", str(conn)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=tmp_path, env=env)
    return proc, workdir, conn, read_until(proc, "Ctrl-C stops everything", 300)


def stop_if_interrupted(summary) -> None:
    """The drill engine absorbs Ctrl-C so that it can stop its processes and save the summary; under
    pytest the session must then stop as pytest stops on Ctrl-C (exit 2), not go on to the next drill."""
    if summary.interrupted:
        raise KeyboardInterrupt(f"drill {summary.scenario} interrupted (its summary is saved)")


LOG_TAIL_LINES = 40
LOG_FILES_SHOWN = 4


def process_log_tails(root: Path) -> list[tuple[str, str]]:
    """The last lines of the newest process logs under ``root`` (Java stack frames left out): what a
    failure in CI shows of the replicators and brokers it started, whose folders CI does not keep."""
    logs = sorted((p for p in root.rglob("*.log") if p.is_file()), key=lambda p: p.stat().st_mtime, reverse=True)
    tails = []
    for log in logs[:LOG_FILES_SHOWN]:
        lines = [line for line in log.read_text(errors="replace").splitlines() if not line.startswith("\tat ")]
        tails.append((str(log.relative_to(root)), "\n".join(lines[-LOG_TAIL_LINES:])))
    return tails


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    # A failed test's own processes' logs go into its report: CI deletes the run's folders, and an
    # integration failure without the replicator's last lines could not be explained.
    outcome = yield
    report = outcome.get_result()
    tmp = getattr(item, "funcargs", {}).get("tmp_path")
    if report.failed and report.when == "call" and isinstance(tmp, Path) and tmp.exists():
        for name, tail in process_log_tails(tmp):
            report.sections.append((f"last lines of {name}", tail))


def pytest_sessionfinish(session, exitstatus):
    # A test run must leave no JVM, proxy or Spark process behind; if one survived, that is a
    # bug in an exit path: fail the run, name the process, and clean up after it.
    factory = getattr(session.config, "_tmp_path_factory", None)
    if factory is None or getattr(factory, "_basetemp", None) is None:
        return
    orphans = processes_under(factory.getbasetemp())
    if orphans:
        for pid, cmd in orphans:
            print(f"\nmirrordrill: ORPHAN process left by the tests: pid {pid}: {cmd}")
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
