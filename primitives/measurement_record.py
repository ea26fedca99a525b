"""One measurement sitting kept as data: a versioned JSON record of what a benchmark measured, where and when.

The manual's measurement tables are generated from these records (harness/tools/measurement_tables.py),
so a figure is written once, by the command that measured it, next to the facts that make it comparable
(the commit, the machine and how busy it was). It lives in the bottom layer because the benchmarks that
write records sit in several layers (the checker's, the load's, the tools').
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from mirrordrill.primitives.redaction import redact_argv

FORMAT = 1  # raise when a field changes meaning; readers refuse a format they do not know
RECORDS_DIR = Path("docs") / "measurements"  # relative to a checkout's root
RECORD_HELP = ("also write the figures as a measurement record (versioned JSON: command, commit, date, machine, "
               "figures) into DIR, or to the file PATH.json (default: docs/measurements/)")


def add_record_option(parser: Any) -> None:
    """``--record [PATH|DIR]`` on a benchmark's command line (argparse's parser or subparser)."""
    parser.add_argument("--record", nargs="?", const=str(RECORDS_DIR), metavar="PATH|DIR", help=RECORD_HELP)


def _cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def _memory_gib() -> float | None:
    try:
        return round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    except (ValueError, OSError, AttributeError):
        return None


def _load_average() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def commit_of(root: Path | None = None) -> str:
    """The checkout's HEAD, or the installed package's version outside a checkout."""
    here = root or Path(__file__).resolve().parents[1]
    # Only the checkout's own HEAD: an installed tool's site-packages may lie in a team's repository (.venv/).
    if (here / ".git").exists():
        try:
            out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True,
                                 timeout=10, check=False)
            if out.returncode == 0 and out.stdout.strip():
                return out.stdout.strip()
        except (OSError, subprocess.TimeoutExpired):
            pass
    try:
        return f"mirrordrill {metadata.version('mirrordrill')}"
    except metadata.PackageNotFoundError:
        return "unknown"


@dataclass
class Sitting:
    """A benchmark's sitting, begun when the command starts (its date and load average then) and
    written as a record when its figures are in."""

    command: list[str]
    date: datetime = field(default_factory=lambda: datetime.now(UTC))
    load_average_start: list[float] | None = field(default_factory=_load_average)

    @classmethod
    def begin(cls, program: Sequence[str], argv: Sequence[str] | None = None) -> Sitting:
        """``program`` is how the command was invoked (``["mirrordrill"]``, ``["python", "-m", mod]``),
        ``argv`` its arguments (default: this process's); secret-looking values are redacted."""
        args = list(sys.argv[1:] if argv is None else argv)
        return cls(redact_argv([*program, *args]))

    def record(self, kind: str, figures: dict[str, Any]) -> dict[str, Any]:
        return {"format": FORMAT, "kind": kind, "command": self.command, "commit": commit_of(),
                "date": self.date.isoformat(timespec="seconds"),
                "machine": {"cores": os.cpu_count(), "cpu_model": _cpu_model(), "memory_gib": _memory_gib(),
                            "load_average_start": self.load_average_start, "load_average_end": _load_average()},
                "figures": figures}

    def path_for(self, kind: str, target: str | Path) -> Path:
        """The file ``write`` writes: ``target`` itself when it ends in ``.json``, else ``<kind>-<date>.json`` in it."""
        target = Path(target)
        return target if target.suffix == ".json" else target / f"{kind}-{self.date:%Y-%m-%dT%H%M%SZ}.json"

    def write(self, kind: str, figures: dict[str, Any], target: str | Path) -> Path:
        """Write the record to ``target`` (a ``.json`` file) or into it (a folder, made if missing)
        as ``<kind>-<date>.json``; returns the file written."""
        path = self.path_for(kind, target)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.record(kind, figures), indent=2, default=str) + "\n")
        return path


def read_record(path: Path) -> dict[str, Any]:
    """A record file, refused (ValueError) when it is not a record of a format this code knows."""
    doc = json.loads(path.read_text())
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or not isinstance(doc.get("figures"), dict):
        raise ValueError(f"{path}: not a measurement record of format {FORMAT}")
    return doc


def read_records(directory: Path, kind: str) -> list[tuple[dict[str, Any], Path]]:
    """Every record of ``kind`` in ``directory`` with its file, oldest first (by its date)."""
    docs = [(read_record(p), p) for p in sorted(directory.glob("*.json"))]
    return sorted((d for d in docs if d[0].get("kind") == kind), key=lambda d: str(d[0].get("date")))
