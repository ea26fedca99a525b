"""The CPU meter every benchmark and the sweep read: own time, a process tree's, waited-for children's."""

from __future__ import annotations

import os
import subprocess
import sys

from primitives.cpu import process_cpu_seconds, read_stat, tree_cpu_seconds, waited_children_cpu_seconds


def test_a_tree_counts_its_busy_child_and_a_gone_process_reads_none():
    child = subprocess.Popen([sys.executable, "-c", "import time\nwhile time.process_time() < 0.5: pass\n"
                              "time.sleep(30)"])
    try:
        for _ in range(200):
            own = process_cpu_seconds(child.pid)
            if own is not None and own >= 0.4:
                break
            subprocess.run(["sleep", "0.05"])
        assert read_stat(child.pid).ppid == os.getpid()
        assert tree_cpu_seconds([os.getpid(), None]) >= process_cpu_seconds(child.pid) >= 0.4
    finally:
        child.kill()
        child.wait()
    assert process_cpu_seconds(child.pid) is None
    assert waited_children_cpu_seconds() >= 0.4  # the child, waited for, is in our rusage
