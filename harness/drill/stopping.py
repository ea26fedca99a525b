"""Stopping what a drill started, part by part, whatever each part does on its way down."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

StopPart = tuple[str, Callable[[], object]]

# A part that takes longer is named in the drill's log with its time: the end of a drill is
# otherwise silent, and a stop that waits out a timeout is where a drill's minutes go.
SLOW_STOP_S = 2.0


def replicator_parts(replicators: Iterable) -> list[StopPart]:
    """One part per replicator (the drill's current one, then the ones it retired, e.g. a failback's copy
    back): one that fails to stop must not keep the others running until the environment kills them."""
    return [(f"replicator ({r.kind}, #{i})", r.stop) for i, r in enumerate(replicators, 1)]


def stop_in_turn(parts: list[StopPart], log: Callable[[str], None], last_resort: str = "environment",
                 clock: Callable[[], float] = time.monotonic) -> bool:
    """Run every part's stop even if another fails or a second Ctrl-C arrives meanwhile; True if interrupted.

    A Ctrl-C while stopping ``last_resort`` (the part that kills every process) runs it once more: no
    process may outlive the drill."""
    interrupted = False
    for what, stop in parts:
        began = clock()
        try:
            stop()
        except KeyboardInterrupt:
            interrupted = True
            log(f"interrupted again while stopping the {what}; still stopping the rest")
            if what == last_resort:
                try:
                    stop()
                except Exception as e:
                    log(f"stopping the {what}: {type(e).__name__}: {e}")
        except Exception as e:
            log(f"stopping the {what}: {type(e).__name__}: {e}")
        took = clock() - began
        if took >= SLOW_STOP_S:
            log(f"stopped the {what} in {took:.1f}s")
    return interrupted
