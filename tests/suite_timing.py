"""Where the suite's time goes: a per-folder total at the end of every run.

pytest's own ``--durations`` (set in pyproject.toml) names the slowest tests; this adds the sum per
folder of ``tests/`` (setup, call and teardown together), so a CI log shows which part of the suite
grew. Fixture time shared by a module lands on the test that first paid it, which is where it is
spent.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import PurePosixPath

import pytest


class FolderTimes:
    """Seconds and test counts per folder, summed from every test's reports."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.tests: dict[str, set[str]] = defaultdict(set)

    @staticmethod
    def folder_of(nodeid: str) -> str:
        parts = PurePosixPath(nodeid.split("::", 1)[0]).parts
        return "/".join(parts[:2]) if len(parts) > 2 else (parts[0] if parts else "?")

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        folder = self.folder_of(report.nodeid)
        self.seconds[folder] += report.duration
        self.tests[folder].add(report.nodeid)

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if not self.seconds:
            return
        terminalreporter.write_sep("=", "time per folder (setup + call + teardown)")
        total = sum(self.seconds.values())
        for folder, seconds in sorted(self.seconds.items(), key=lambda kv: -kv[1]):
            terminalreporter.write_line(f"{seconds:9.1f} s  {seconds / total:6.1%}  "
                                        f"{len(self.tests[folder]):5d} tests  {folder}")
        terminalreporter.write_line(f"{total:9.1f} s  in all")


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(FolderTimes(), "mirrordrill-folder-times")
