"""A sweep's outcome: its points and ceilings, with the views the table, the knee and the plot use."""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from mirrordrill.harness.tools.sweep.knee import recommend, swept_key
from mirrordrill.harness.tools.sweep.points import Ceiling, SweepParam, SweepPoint
from mirrordrill.harness.tools.sweep.table import render_table


@dataclass
class SweepResult:
    out_dir: Path
    params: list[SweepParam]
    points: list[SweepPoint]
    ceiling: Ceiling | None
    ceiling_after: Ceiling | None = None  # measured again once the points ran: was the machine steady?
    started_ms: int = field(default_factory=lambda: int(time.time() * 1000))
    plot: Path | None = None  # sweep-throughput.png once the CLI's reports drew it
    run_dirs: list[Path] = field(default_factory=list)
    interrupted: bool = False

    @property
    def swept(self) -> str:
        """The x axis: the first parameter whose values are all numbers (else the first)."""
        return swept_key(self.params)

    @property
    def others(self) -> list[str]:
        return [p.key for p in self.params if p.key != self.swept]

    def representative(self) -> list[SweepPoint]:
        """One point per combination: with repeated runs, the run of median capacity (the lower
        median, so every figure shown comes from one real run); failed runs only if all failed."""
        groups: dict[str, list[SweepPoint]] = {}
        for pt in self.points:
            groups.setdefault(json.dumps(pt.params, sort_keys=True), []).append(pt)
        out = []
        for runs in groups.values():
            measured = [(capacity, pt) for pt in runs if not pt.error and (capacity := pt.capacity) is not None]
            ok = [pt for _, pt in sorted(measured, key=lambda m: m[0])]
            out.append(ok[(len(ok) - 1) // 2] if ok else runs[-1])
        return out

    def table(self) -> str:
        return render_table(self)

    def to_json(self) -> dict:
        """What sweep.jsonl holds, in one object (a measurement record's figures)."""
        return {"params": [asdict(p) for p in self.params], "points": [asdict(p) for p in self.points],
                "ceiling": None if self.ceiling is None else asdict(self.ceiling),
                "ceiling_after": None if self.ceiling_after is None else asdict(self.ceiling_after),
                "interrupted": self.interrupted}

    def recommendation(self) -> str:
        return recommend(self)
