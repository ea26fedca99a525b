"""The CPU meter every benchmark and the sweep read: own time, a process tree's, waited-for children's."""

from __future__ import annotations

import os
import subprocess
import sys

from mirrordrill.primitives.cpu import process_cpu_seconds, read_stat, tree_cpu_seconds, waited_children_cpu_seconds


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


def test_sweep_cpu_meter_reads_own_time_of_processes_under_a_folder(tmp_path):
    import subprocess
    import sys
    import time

    from mirrordrill.primitives.cpu import CpuMeter
    busy = subprocess.Popen([sys.executable, "-c", "import time\nwhile time.process_time() < 0.6: pass"],
                            cwd=tmp_path)
    try:
        with CpuMeter(tmp_path, interval_s=0.2) as meter:
            busy.wait(60)
            time.sleep(0.5)
    finally:
        busy.kill()
    assert 0.1 < meter.cpu_s < 1.0  # its own 0.6 s, as last sampled; not the test's
    t0, t1 = meter.samples[0][0], meter.samples[-1][0]
    assert meter.cpu_between(t0, t1) == meter.samples[-1][1] - meter.samples[0][1]


def test_cpu_by_role_counts_a_process_for_its_most_specific_folder_and_this_one_for_the_harness(tmp_path):
    import subprocess
    import sys
    import time

    from mirrordrill.primitives.cpu import MACHINE, CpuByRole
    env, cluster = tmp_path / "env", tmp_path / "env" / "dr"
    cluster.mkdir(parents=True)
    spin = "import time\nwhile time.process_time() < {}: pass\ntime.sleep(30)"
    in_cluster = subprocess.Popen([sys.executable, "-c", spin.format(0.6)], cwd=cluster)
    in_env = subprocess.Popen([sys.executable, "-c", spin.format(0.2)], cwd=env)
    try:
        with CpuByRole({"network": [env], "brokers dr": [cluster]}, self_role="harness", interval_s=0.2) as meter:
            while time.process_time() < 0.3 or (process_cpu_seconds(in_cluster.pid) or 0) < 0.6:
                pass  # this process's own CPU, for the harness role
            time.sleep(0.5)
    finally:
        for p in (in_cluster, in_env):
            p.kill()
            p.wait()
    (t0, first), (t1, last) = meter.samples[0], meter.samples[-1]
    used = {role: last[role] - first[role] for role in last}
    assert 0.3 <= used["brokers dr"] <= 0.7  # the spinner in env/dr, not counted for env as well
    assert used["network"] <= 0.3
    assert used["harness"] >= 0.2
    assert used[MACHINE] >= used["brokers dr"] + used["harness"] - 0.1  # every core's busy time holds them
    cores = meter.cores_between(t0, t1)
    assert cores is not None and cores["brokers dr"] == round(used["brokers dr"] / (t1 - t0), 2)
