"""A replicator process that crashes mid-drill is said once, and an exit the harness asked for is not a crash."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import cast

import pytest

from mirrordrill.harness.drill.context import DrillContext
from mirrordrill.harness.drill.replicator_watch import REPLICATOR_EXIT_KIND, ReplicatorWatch
from mirrordrill.harness.drill.replicators.processes import exit_in_words
from mirrordrill.primitives.process import ManagedProcess

CRASH = [sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"]
SLEEP = [sys.executable, "-c", "import time; time.sleep(60)"]


def test_a_process_that_ends_by_itself_is_told_from_one_stopped_or_killed(tmp_path: Path):
    crashed = ManagedProcess("crashes", CRASH, tmp_path / "crash.log")
    crashed.start()
    assert crashed.wait(30) == -11
    assert crashed.exited_unasked == -11 and exit_in_words(-11) == "killed by signal 11 (SIGSEGV)"

    for end in ("stop", "kill"):
        proc = ManagedProcess(end, SLEEP, tmp_path / f"{end}.log", stop_timeout_s=5)
        proc.start()
        assert proc.exited_unasked is None  # running
        getattr(proc, end)()
        assert proc.returncode is not None and proc.exited_unasked is None, end
        proc.argv = CRASH  # started again, it crashes: that exit was not asked for
        proc.start()
        assert proc.wait(30) == -11 and proc.exited_unasked == -11, end
    assert exit_in_words(3) == "exit code 3"


class FakeReplicator:
    def __init__(self) -> None:
        self.exits: list[str] = []

    def exits_unasked(self) -> list[str]:
        return list(self.exits)


class FakeContext:
    def __init__(self, *replicators: FakeReplicator) -> None:
        self.replicators = list(replicators)
        self.events: list[tuple[str, str, str, str]] = []

    def all_replicators(self) -> list[FakeReplicator]:
        return self.replicators

    def elapsed(self) -> float:
        return 24.0

    def record(self, name: str, kind: str, start_ms: int, end_ms: int, outcome: str, detail: str = "") -> None:
        assert start_ms == end_ms
        self.events.append((name, kind, outcome, detail))


def test_each_crash_is_said_once_in_the_log_and_the_timeline_and_again_after_a_restart():
    current, retired = FakeReplicator(), FakeReplicator()
    fake = FakeContext(current, retired)
    ctx = cast(DrillContext, fake)  # a stand-in with the few methods the watch calls
    lines: list[str] = []
    watch = ReplicatorWatch(lines.append)
    assert watch.check(ctx) == []
    crash = "pyspark replicator @dr exited by itself (killed by signal 11 (SIGSEGV)); its log: /x/replicator.log"
    current.exits.append(crash)
    assert watch.check(ctx) == [crash]
    assert watch.check(ctx) == []  # said once
    assert lines == [f"[   24s] {crash}"]
    assert fake.events == [("replicator exited", REPLICATOR_EXIT_KIND, "failed", crash)]
    current.exits.clear()  # started again (by a step)
    assert watch.check(ctx) == []
    current.exits.append(crash)  # and crashed again
    retired.exits.append("mm2 node 1 exited by itself (exit code 1); its log: /y")
    assert watch.check(ctx) == sorted([crash, retired.exits[0]])
    assert len(fake.events) == 3


@pytest.mark.parametrize("code", [-9, -15])
def test_signals_are_named(code: int):
    assert exit_in_words(code).startswith(f"killed by signal {-code} (SIG")
