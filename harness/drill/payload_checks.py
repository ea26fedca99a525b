"""The load producers' payload models checked against the rest of their definition, before anything starts."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from mirrordrill.harness.drill.schema import Scenario
from mirrordrill.loadgen.payload import file_problem

Report = Callable[[tuple, str], None]  # (path in the drill file, message)


def payload_problems(s: Scenario, bad: Report, drill_dir: Path | None) -> None:
    """A record_size beside a payload that sets its own length, and a sample file that cannot be read
    (relative to ``drill_dir``; not checked for drill text with no file)."""
    for i, p in enumerate(s.load.producers):
        if not p.payload.sized and "record_size" in p.model_fields_set:
            bad(("load", "producers", i, "record_size"),
                f"a {p.payload.kind} payload's records are as long as their text: remove record_size, "
                "or use payload: {compress_ratio: R} for records of a set size")
        if p.payload.file is not None and (drill_dir is not None or p.payload.file.is_absolute()):
            problem = file_problem(p.payload.resolved(drill_dir).file or p.payload.file)
            if problem:
                bad(("load", "producers", i, "payload", "file"), problem)
