"""Drill profiles: the same drill, its clock scaled, so CI can afford every shipped drill.

``full`` runs the file as written. ``short`` multiplies the load's ``duration``, every timeline
step's ``at``, each ``when`` condition's ``timeout`` and each backlog's size by the profile's
scale (0.5 unless the file's ``profiles: {short: {scale: …}}`` says otherwise): the same faults
happen in the same order, on a shorter load. A condition's wait is scaled with the load it waits
in: unscaled, a step at 12.5 s whose lag condition never held ran 30 s later, after a 30 s load
had ended, with nothing left to measure a failover on. Limits on how long a phase may take
(``drain_timeout``, a step's own ``timeout``) stay as written: they cost time only when something
is slow, and halving them would fail a drill on a busy machine, not shorten a healthy one.

Counts scale with time (acked records, what a group had processed before a failure), so a file
gives the figures that differ at the short profile in ``profiles: {short: {expectations: …,
invariants: …}}``; they replace the file's lines on the same metric (a replicator's own section
merges key by key), as a replicator's section does in ``expectations``.

The transform works on the file's data before it is validated, so ``validate``, ``run``,
``calibrate``, ``sweep`` and the test suite read a profiled drill exactly as they read a file.

Where the pyspark replicator's Spark runs changes its figures too: a driver submitted to a
standalone master needs its executors launched before it copies again, so a restart costs
seconds more than in local mode. ``spark_masters: {standalone: {expectations: …, invariants: …}}``
(and the same under ``profiles: {short: …}``) gives the limits calibrated there; they apply, after
the profile's, when the run's master (``--spark-master``, else ``replication.spark.master``) is of
that kind and the replicator is pyspark.
"""

from __future__ import annotations

import copy
from typing import Any

from mirrordrill.harness.drill.durations import parse_duration

PROFILES = ("full", "short")
DEFAULT_SCALE = {"full": 1.0, "short": 0.5}
DEFAULT_DURATION_S = 60.0  # the model's defaults, scaled when the file leaves them out
DEFAULT_WHEN_TIMEOUT_S = 120.0


class ProfileError(ValueError):
    """An unknown profile name; the message lists the valid ones."""


def check_profile(name: str) -> str:
    if name not in PROFILES:
        raise ProfileError(f"unknown profile {name!r}; profiles are {', '.join(PROFILES)} "
                           f"(short: durations x {DEFAULT_SCALE['short']:g}, same faults in the same order)")
    return name


def apply_profile(data: dict, name: str | None) -> dict:
    """A copy of a drill file's data at profile ``name`` (``None`` or ``full``: the data unchanged)."""
    if name in (None, "full"):
        return data
    check_profile(name)
    out = copy.deepcopy(data)
    own = (out.get("profiles") or {}).get(name) if isinstance(out.get("profiles"), dict) else None
    own = own if isinstance(own, dict) else {}
    scale = own.get("scale", DEFAULT_SCALE[name])
    if not isinstance(scale, (int, float)) or isinstance(scale, bool) or not 0 < scale <= 1:
        return out  # the model refuses the scale and names it; nothing is scaled by a bad value
    out["duration"] = _scaled(out.get("duration", DEFAULT_DURATION_S), scale)
    for step in out.get("timeline") or []:
        if isinstance(step, dict) and "at" in step:
            step["at"] = _scaled(step["at"], scale)
        if isinstance(step, dict) and isinstance(step.get("when"), dict):
            step["when"]["timeout"] = _scaled(step["when"].get("timeout", DEFAULT_WHEN_TIMEOUT_S), scale)
    for backlog in ((out.get("load") or {}).get("backlog") or []) if isinstance(out.get("load"), dict) else []:
        if isinstance(backlog, dict) and isinstance(backlog.get("records"), int):
            backlog["records"] = max(1, round(backlog["records"] * scale))
    for section in ("expectations", "invariants", "spark_masters"):
        if isinstance(own.get(section), dict):
            out[section] = overlay(out.get(section) or {}, own[section])
    out.pop("profiles", None)  # applied: the result is a plain drill, which a sweep point's file holds
    return out


def spark_master_kind(master: str | None) -> str | None:
    """The kind of Spark master a ``spark_masters`` section is keyed by: ``local`` (the default and
    ``local[N]``), ``standalone`` (started here, or a ``spark://`` URL); None for yarn and k8s."""
    m = (master or "local").strip()
    if m.startswith("local"):
        return "local"
    if m == "standalone" or m.startswith("spark://"):
        return "standalone"
    return None


def file_spark_master(data: dict) -> str | None:
    """The master a drill file's data asks for (``replication.spark.master``), if it says."""
    replication = data.get("replication")
    spark = replication.get("spark") if isinstance(replication, dict) else None
    master = spark.get("master") if isinstance(spark, dict) else None
    return master if isinstance(master, str) else None


def apply_spark_master(data: dict, master: str | None, replicator: str | None) -> dict:
    """A copy of a drill file's data with the limits of its ``spark_masters`` section for the
    run's master (``master``, else the file's) laid over its own, when the pyspark replicator runs."""
    replication = data.get("replication")
    kind = replicator or (replication.get("replicator") if isinstance(replication, dict) else None) or "pyspark"
    sections = data.get("spark_masters")
    own = sections.get(spark_master_kind(master or file_spark_master(data))) if isinstance(sections, dict) else None
    if kind != "pyspark" or not isinstance(own, dict):
        return data
    out = copy.deepcopy(data)
    for section in ("expectations", "invariants"):
        if isinstance(own.get(section), dict):
            out[section] = overlay(out.get(section) or {}, own[section])
    return out


def overlay(base: dict, over: dict) -> dict:
    """``base`` with ``over``'s lines replacing or adding to it; a nested mapping (a replicator's
    section) merges key by key. Keys compare without spaces: ``failover.skipped[g-a]`` is one metric."""
    if not isinstance(base, dict):
        return over
    def norm(k: object) -> str:
        return "".join(str(k).split())

    out = {k: v for k, v in base.items() if norm(k) not in {norm(o) for o in over}}
    for key, value in over.items():
        same = next((k for k in base if norm(k) == norm(key)), None)
        out[key] = overlay(base[same], value) if isinstance(value, dict) and isinstance(base.get(same), dict) else value
    return out


def _scaled(value: Any, scale: float) -> Any:
    try:
        seconds = parse_duration(value)
    except ValueError:
        return value  # the model names the bad duration
    return round(seconds * scale, 3)
