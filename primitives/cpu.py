"""CPU time of processes, read from ``/proc`` (Linux; no psutil).

One meter for every benchmark and the sweep: a process's own user + system time
(:func:`process_cpu_seconds`), a process tree's (:func:`tree_cpu_seconds`), the children this
process already waited for (:func:`waited_children_cpu_seconds`), and a sampler of
every process working under a folder (:class:`CpuMeter`), which is how the sweep finds the
replicator's processes whatever started them, and the machine's CPU split by role
(:class:`CpuByRole`): what the replicator, each cluster's brokers, the network, the load and the
harness each kept busy.
"""

from __future__ import annotations

import os
import resource
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

# fields of /proc/<pid>/stat after the command name, counted from 0 (stat(5) numbers them from 1,
# with pid and comm as 1 and 2)
_PPID, _UTIME, _STIME, _CUTIME, _CSTIME, _STARTTIME = 1, 11, 12, 13, 14, 19


@dataclass(frozen=True)
class ProcStat:
    """The figures of ``/proc/<pid>/stat`` this module reads, in seconds where they are times."""

    ppid: int
    own_s: float        # utime + stime
    children_s: float   # cutime + cstime: children that ended and were waited for
    start_ticks: int    # when the process started: with the pid, a process's identity


def read_stat(pid: int) -> ProcStat | None:
    """``/proc/<pid>/stat`` of one process; None once it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        fields = stat[stat.rindex(")") + 2:].split()  # the command name may contain spaces
        tick = os.sysconf("SC_CLK_TCK")
        return ProcStat(int(fields[_PPID]), (int(fields[_UTIME]) + int(fields[_STIME])) / tick,
                        (int(fields[_CUTIME]) + int(fields[_CSTIME])) / tick, int(fields[_STARTTIME]))
    except (OSError, ValueError, IndexError):
        return None


def process_cpu_seconds(pid: int) -> float | None:
    """utime + stime of one process: its own time only.

    A child's time is left out: while it runs it is a process of its own, and once waited for
    it would be counted again through the parent's cutime/cstime.
    """
    stat = read_stat(pid)
    return stat.own_s if stat else None


def waited_children_cpu_seconds() -> float:
    """CPU seconds of this process's children that have ended and been waited for."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _all_pids() -> list[int]:
    return [int(d.name) for d in Path("/proc").iterdir() if d.name.isdigit()]


def tree_cpu_seconds(pids: Iterable[int | None]) -> float:
    """CPU seconds of these processes and every live descendant, with the time of the children
    each of them has already waited for (cutime/cstime)."""
    stats = {pid: s for pid in _all_pids() if (s := read_stat(pid)) is not None}
    children: dict[int, list[int]] = {}
    for pid, s in stats.items():
        children.setdefault(s.ppid, []).append(pid)
    seen: set[int] = set()
    todo = [pid for pid in pids if pid is not None]
    while todo:
        pid = todo.pop()
        if pid in seen or pid not in stats:
            continue
        seen.add(pid)
        todo.extend(children.get(pid, ()))
    return sum(stats[pid].own_s + stats[pid].children_s for pid in seen)


def pids_under(root: Path) -> list[int]:
    """Processes whose working folder is ``root`` or below it."""
    root_s = str(Path(root).resolve())
    pids = []
    for pid in _all_pids():
        try:
            cwd = os.readlink(f"/proc/{pid}/cwd")
        except OSError:
            continue
        if cwd == root_s or cwd.startswith(root_s + os.sep):
            pids.append(pid)
    return pids


class _EverySecond:
    """A daemon thread calling ``sample`` every ``interval_s`` while the ``with`` block runs."""

    interval_s: float

    def __init__(self, name: str) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)

    def sample(self) -> None:
        raise NotImplementedError

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.sample()
            except Exception:  # a process vanishing mid-read; the next second reads again
                pass

    def _start(self) -> None:
        self._thread.start()

    def _end(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


def _nearest(samples: Sequence[tuple[float, T]], t: float) -> tuple[float, T]:
    return min(samples, key=lambda s: abs(s[0] - t))


class CpuMeter(_EverySecond):
    """Samples the CPU time of every process whose working folder is under ``root`` (one folder or
    several), once a second, plus what ``extra`` reports (CPU seconds so far of things that are not
    local processes, such as containers, by a key of its choosing).

    ``samples`` are ``(epoch seconds, total CPU seconds so far)``, so the CPU of a window (the
    load, not the JVM start-up) can be read with :meth:`cpu_between`.
    """

    def __init__(self, root: Path | Sequence[Path], interval_s: float = 1.0,
                 extra: Callable[[], dict[str, float]] | None = None):
        self.roots = [Path(root)] if isinstance(root, (str, Path)) else [Path(r) for r in root]
        self.root = self.roots[0]
        self.extra = extra
        self.interval_s = interval_s
        self.latest: dict[tuple[int, int] | str, float] = {}  # (pid, start ticks) or extra's key -> CPU seconds
        self.samples: list[tuple[float, float]] = []
        super().__init__("cpu-meter")

    def __enter__(self) -> CpuMeter:
        self._start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._end()

    def sample(self) -> None:
        for root in self.roots:
            if not root.exists():
                continue
            for pid in pids_under(root):
                stat = read_stat(pid)
                if stat is not None:
                    # keyed with the start time, so a reused pid is a new process; the last
                    # reading before a process ends counts
                    self.latest[(pid, stat.start_ticks)] = stat.own_s
        if self.extra is not None:
            self.latest.update(self.extra())
        self.samples.append((time.time(), self.cpu_s))

    @property
    def cpu_s(self) -> float:
        return sum(self.latest.values())

    def cpu_between(self, start_s: float, end_s: float) -> float | None:
        """CPU seconds used between two epoch times (from the samples nearest them)."""
        if not self.samples or end_s <= start_s:
            return None
        (t0, c0), (t1, c1) = _nearest(self.samples, start_s), _nearest(self.samples, end_s)
        return c1 - c0 if t1 > t0 else None


def machine_busy_seconds() -> float | None:
    """CPU seconds every core of the machine spent busy since boot (``/proc/stat``: user, nice,
    system, irq, softirq and steal; guest time is already inside user)."""
    try:
        first = Path("/proc/stat").read_text().split("\n", 1)[0].split()
        user, nice, system, _idle, _iowait, irq, softirq, steal = (int(x) for x in first[1:9])
    except (OSError, ValueError):
        return None
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


MACHINE = "machine"  # CpuByRole's key for the whole machine's busy seconds


class CpuByRole(_EverySecond):
    """Where a machine's CPU goes, by role: once a second, each process whose working folder is
    under one of a role's folders counts for that role (the most specific folder wins, so a
    cluster's folder inside the run's environment folder is the cluster's), this process counts
    for ``self_role``, and :data:`MACHINE` holds the busy seconds of every core, so what no role
    accounts for (anything else on the machine) shows as the difference.

    ``samples`` are ``(epoch seconds, {role: CPU seconds so far})``; :meth:`cores_between` reads a
    window of them as cores kept busy.
    """

    def __init__(self, roles: Mapping[str, Sequence[Path]], self_role: str | None = None,
                 interval_s: float = 1.0):
        self.folders = sorted(((str(Path(f).resolve()), role) for role, folders in roles.items() for f in folders),
                              key=lambda fr: len(fr[0]), reverse=True)
        self.self_role = self_role
        self.roles = [*roles, *([self_role] if self_role else []), MACHINE]
        self.interval_s = interval_s
        self.latest: dict[tuple[int, int], tuple[str, float]] = {}  # (pid, start ticks) -> (role, CPU seconds)
        self.samples: list[tuple[float, dict[str, float]]] = []
        super().__init__("cpu-by-role")

    def __enter__(self) -> CpuByRole:
        self.sample()
        self._start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._end()
        self.sample()

    def role_of(self, pid: int) -> str | None:
        if pid == os.getpid():
            return self.self_role
        try:
            cwd = os.readlink(f"/proc/{pid}/cwd")
        except OSError:
            return None
        return next((role for folder, role in self.folders if cwd == folder or cwd.startswith(folder + os.sep)),
                    None)

    def sample(self) -> None:
        for pid in _all_pids():
            role = self.role_of(pid)
            stat = read_stat(pid) if role is not None else None
            if role is not None and stat is not None:
                self.latest[(pid, stat.start_ticks)] = (role, stat.own_s)  # a gone process keeps its last reading
        totals = dict.fromkeys(self.roles, 0.0)
        for role, seconds in self.latest.values():
            totals[role] += seconds
        totals[MACHINE] = machine_busy_seconds() or 0.0
        self.samples.append((time.time(), totals))

    def cores_between(self, start_s: float, end_s: float) -> dict[str, float] | None:
        """Cores each role kept busy on average between two epoch times (the samples nearest
        them); None without two distinct samples in reach."""
        if len(self.samples) < 2 or end_s <= start_s:
            return None
        (t0, c0), (t1, c1) = _nearest(self.samples, start_s), _nearest(self.samples, end_s)
        if t1 <= t0:
            return None
        return {role: round((c1[role] - c0[role]) / (t1 - t0), 2) for role in self.roles}
