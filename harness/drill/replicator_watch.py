"""A replicator process that ends during the drill with nobody asking it to is said at once.

Without it, a crashed replicator (a segfault in a client library, an out-of-memory kill) showed
only as lag that stopped moving, until the drain timed out minutes later, and nothing in the drill
log said why. From the replicator's start until the clients stop, every replicator the drill
started (a failback's retired ones too) is looked at each second; each exit is said once, in the
drill log and as a timeline event whose outcome is "failed" (summary.json, the report and Allure
show it). Exits a step or the harness asked for (a kill, a stop, a restart) are not crashes and
are not said. A process started again and crashing again is said again.
"""

from __future__ import annotations

import threading

from mirrordrill.harness.drill.context import DrillContext, now_ms
from mirrordrill.harness.drill.phase_state import Log

REPLICATOR_EXIT_KIND = "replicator_exit"
CHECK_EVERY_S = 1.0


class ReplicatorWatch:
    def __init__(self, log: Log, interval_s: float = CHECK_EVERY_S):
        self.log, self.interval_s = log, interval_s
        self._said: set[str] = set()
        self._stop = threading.Event()

    def start(self, ctx: DrillContext) -> None:
        threading.Thread(target=self._run, args=(ctx,), name="replicator watch", daemon=True).start()

    def stop(self) -> None:
        self._stop.set()

    def _run(self, ctx: DrillContext) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.check(ctx)
            except Exception as e:  # a look that fails must not end the drill; the next one may work
                self.log(f"[{ctx.elapsed():5.0f}s] could not look at the replicator's processes: {e}")

    def check(self, ctx: DrillContext) -> list[str]:
        """Say each exit not said yet; the exits said now."""
        exits = {e for replicator in ctx.all_replicators() for e in replicator.exits_unasked()}
        new = sorted(exits - self._said)
        self._said = exits  # one that runs again leaves the set: a second crash is said again
        for exit_words in new:
            at = now_ms()
            self.log(f"[{ctx.elapsed():5.0f}s] {exit_words}")
            ctx.record("replicator exited", REPLICATOR_EXIT_KIND, at, at, "failed", exit_words)
        return new
