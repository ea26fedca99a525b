"""``run --jfr``: each replicator JVM's flight recording, summarized beside it once the drill has stopped it.

The recordings themselves stay (``flight.jfr`` in each node's folder: JDK Mission Control and
``jfr print`` read them); the summary (``flight-summary.json``) ranks where each kind of thread
spent its samples, which is what a measurement record of a profile keeps.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from mirrordrill.harness.drill.replicators.interface import FLIGHT_RECORDING_FILE
from mirrordrill.primitives.jvm_flight_recording import RecordingProfile, summarize

SUMMARY_FILE = "flight-summary.json"
THREAD_KINDS_SHOWN = 3


def profile_line(where: str, profile: RecordingProfile) -> str:
    """One line of what a recording holds: its samples and its busiest thread kinds with their top method."""
    cpu = f", JVM {profile.jvm_cpu:.0%} of the machine's CPU" if profile.jvm_cpu is not None else ""
    busiest = []
    for t in profile.threads[:THREAD_KINDS_SHOWN]:
        top = f" (in {t.self_methods[0].method} {t.self_methods[0].share:.0%})" if t.self_methods else ""
        busiest.append(f"{t.kind!r} {t.share:.0%}{top}")
    return f"flight recording {where}: {profile.samples:,} samples{cpu}; " + "; ".join(busiest)


def first_copy_ms(starts: Iterable[Mapping[str, Any]]) -> int | None:
    """When the run's first record was copied (epoch ms), from the replicators' ``start_times``; None: unknown."""
    moments = [int(s["started_at_ms"] + 1000 * s["first_record_s"]) for s in starts
               if s.get("started_at_ms") is not None and s.get("first_record_s") is not None]
    return min(moments) if moments else None


def summarize_recordings(run_dir: Path, java: str, log: Callable[[str], None],
                         from_ms: int | None = None) -> list[Path]:
    """Write ``SUMMARY_FILE`` beside every recording under ``run_dir``; the summaries written.

    ``from_ms``: count only the samples from then on (the drill passes its first record's copy:
    the replicator's start-up, class loading and planning, is not what a profile of its copying is for)."""
    written = []
    for recording in sorted(run_dir.rglob(FLIGHT_RECORDING_FILE)):
        where = str(recording.parent.relative_to(run_dir))
        try:
            profile = summarize(recording, java, from_ms)
        except (RuntimeError, OSError, subprocess.TimeoutExpired) as e:
            log(f"flight recording {where}: not summarized ({e})")
            continue
        summary = recording.with_name(SUMMARY_FILE)
        summary.write_text(json.dumps(profile.as_dict(), indent=2) + "\n")
        log(f"{profile_line(where, profile)} ({summary})")
        written.append(summary)
    return written


def recording_summaries(run_dir: Path) -> dict[str, dict]:
    """Every summary ``summarize_recordings`` wrote under ``run_dir``, by its node's folder there."""
    return {str(path.parent.relative_to(run_dir)): json.loads(path.read_text())
            for path in sorted(run_dir.rglob(SUMMARY_FILE))}
