"""Fault windows from the drill timeline, for shading plots.

The timeline records each step as it ran (``blackhole primary<->dr`` took 150 ms); what a
reader needs on a plot is how long the *fault* lasted: from the step that opened it to the
step that closed it on the same subject (``heal primary<->dr``).
"""

from __future__ import annotations

from dataclasses import dataclass

from mirrordrill.harness.drill.results import TimelineEntry

# step kind -> kinds that end the condition it starts on the same subject
_CLOSED_BY = {
    "blackhole": ("heal",), "partition": ("heal",), "set_link": ("heal", "set_link"),
    "pause_broker": ("resume_broker", "restart_broker"),
    "stop_broker": ("restart_broker", "resume_broker"), "kill_broker": ("restart_broker",),
    "pause_cluster": ("resume_cluster", "restart_cluster", "start_cluster"),
    "stop_cluster": ("start_cluster", "restart_cluster"), "kill_cluster": ("start_cluster", "restart_cluster"),
    "kill_replicator": ("start_replicator", "restart_replicator"),
    "stop_replicator": ("start_replicator", "restart_replicator"),
    "pause_replicator": ("resume_replicator", "restart_replicator"),
}
_CLOSERS = {k for v in _CLOSED_BY.values() for k in v} - set(_CLOSED_BY)
# Events recorded inside a step (a failover's "stop producers", a failback's "wipe"): the step
# itself is shaded; twenty sub-steps would bury the plot under its legend.
_PARTS_OF_A_STEP = {"failover", "failback_part", "wipe"}


@dataclass(frozen=True)
class Window:
    """A span of the drill to shade: a fault from its start to the step that ended it."""

    label: str
    kind: str
    start_ms: int
    end_ms: int
    outcome: str
    is_fault: bool


def _subject(event: TimelineEntry) -> str:
    name, kind = event.name, event.kind
    return name[len(kind):].strip() if name.startswith(kind) else name


def fault_windows(timeline: list[TimelineEntry], end_ms: int) -> list[Window]:
    """Faults paired with the step that ended them; other steps (failover, drain) as themselves.

    A fault never ended lasts until ``end_ms``. Closing steps do not get a window of their own.
    """
    out: list[Window] = []
    events = sorted(timeline, key=lambda e: e.start_ts_ms)
    for i, e in enumerate(events):
        kind, stop = e.kind, e.end_ts_ms or end_ms
        if kind in _CLOSED_BY:
            closer = next((c for c in events[i + 1:] if c.kind in _CLOSED_BY[kind]
                           and _subject(c) == _subject(e)), None)
            stop = (closer.end_ts_ms or closer.start_ts_ms) if closer else end_ms
            out.append(Window(e.name, kind, e.start_ts_ms, stop, e.outcome, True))
        elif kind not in _CLOSERS and kind not in _PARTS_OF_A_STEP:
            out.append(Window(e.name, kind, e.start_ts_ms, stop, e.outcome, False))
    return out
