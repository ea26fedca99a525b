"""``sweep.jsonl``: a header naming the drill, the ceilings and one line per point, appended and
fsynced as each is measured, so a sweep stopped anywhere resumes where it stopped."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

from mirrordrill.harness.tools.sweep.params import SweepError
from mirrordrill.harness.tools.sweep.points import Ceiling, SweepParam, SweepPoint


def point_key(params: dict, run: int) -> str:
    """A point's identity in sweep.jsonl: its combination, and which run of it (run 1 unmarked, so
    sweeps written before --repeat existed resume as they are)."""
    return json.dumps(params, sort_keys=True) + (f"#{run}" if run > 1 else "")


def read_jsonl(path: Path) -> list[dict]:
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue  # a line torn by Ctrl-C
    return out


def append_row(path: Path, row: dict) -> None:
    with path.open("a") as f:
        f.write(json.dumps(row) + "\n")
        f.flush()
        os.fsync(f.fileno())


@dataclass
class Journal:
    """One sweep folder's ``sweep.jsonl``: what an earlier run of the same sweep measured, and
    where this run appends."""

    path: Path
    done: dict[str, dict] = field(default_factory=dict)  # point_key -> row of a point measured without error
    ceiling: Ceiling | None = None
    ceiling_after: Ceiling | None = None

    @classmethod
    def open(cls, path: Path, drill: str, fingerprint: str, params: list[SweepParam]) -> Journal:
        """Read what is there (refusing points of another drill) and write the header if new."""
        rows = read_jsonl(path)
        earlier = [r["sweep"] for r in rows if "sweep" in r]
        if earlier and earlier[-1].get("drill_sha256") != fingerprint:
            raise SweepError(f"{path} holds points of another version of the drill ({earlier[-1].get('drill')}); "
                             "a resumed sweep must run the same drill: use a new --out folder")
        if not earlier:
            append_row(path, {"sweep": {"drill": drill, "drill_sha256": fingerprint,
                                        "params": {p.key: list(p.values) for p in params}}})
        ceilings = [r["ceiling"] for r in rows if "ceiling" in r]
        afters = [r["ceiling_after"] for r in rows if "ceiling_after" in r]
        return cls(path, done={point_key(r["params"], r.get("run", 1)): r
                               for r in rows if "params" in r and not r.get("error")},
                   ceiling=Ceiling.from_json(ceilings[-1]) if ceilings else None,
                   ceiling_after=Ceiling.from_json(afters[-1]) if afters else None)

    def measured(self, combo: dict, run: int) -> SweepPoint | None:
        row = self.done.get(point_key(combo, run))
        return SweepPoint.from_json(row) if row is not None else None

    def add_point(self, point: SweepPoint) -> None:
        append_row(self.path, asdict(point))

    def add_ceiling(self, ceiling: Ceiling, after: bool = False) -> None:
        append_row(self.path, {"ceiling_after" if after else "ceiling": asdict(ceiling)})
