"""Fixtures shared by several unit-test modules."""

import os
import subprocess
from pathlib import Path

import pytest

from mirrordrill.primitives.process import ManagedProcess


@pytest.fixture
def nothing_starts(monkeypatch):
    """Fail the test if anything is started: validation runs no process, and leaves no child behind."""
    def refuse(*args, **kwargs):
        raise AssertionError(f"validation started a process: {args or kwargs}")
    monkeypatch.setattr(subprocess, "Popen", refuse)
    monkeypatch.setattr(ManagedProcess, "start", refuse)
    before = _children()
    yield
    assert _children() == before


def _children() -> set[int]:
    """This process's children, from /proc (psutil is not installed)."""
    me, out = os.getpid(), set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == me:
                out.add(int(entry.name))
    return out
