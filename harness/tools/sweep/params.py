"""The grid of a sweep: ``--param`` values, their combinations, and a combination applied to a drill."""

from __future__ import annotations

import difflib
import itertools
import json
import tempfile
from pathlib import Path
from typing import Any

import yaml

from mirrordrill.harness.drill.durations import parse_duration
from mirrordrill.harness.drill.profile import DEFAULT_DURATION_S
from mirrordrill.harness.drill.replicators import replicator_class, replicator_kinds, sweepable_kinds
from mirrordrill.harness.tools.sweep.points import SweepParam
from mirrordrill.primitives.jvm_jit import JIT_MODES

# sweep keys that are not flow settings, and the flow setting a shorthand stands for
_SHORTHANDS = {"num_streams": "tasks.max", "linger.ms": "producer.linger.ms", "batch.size": "producer.batch.size"}
COMPRESSION_TYPES = ("none", "gzip", "snappy", "lz4", "zstd")  # Kafka's, for producers and topics alike
# sweep keys that set every WAN link of the drill (both ways), as its ``links:`` entries spell them
LINK_KEYS = ("latency_ms", "bandwidth_kb_s")
MM2_NODES_KEY = "mm2_nodes"  # replication.mirrormaker2.nodes
MM2_WORKER_PREFIX = "mm2_worker."  # mm2_worker.<key>: a Connect worker setting, replication.mirrormaker2.worker.<key>


class SweepError(ValueError):
    """A sweep that cannot run (bad --param, unknown key); the message says what is valid."""


def _value(text: str) -> Any:
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def parse_params(specs: list[str]) -> list[SweepParam]:
    """``["num_streams=1,2,4", "replicator=pyspark,mirrormaker2"]`` -> parameters, in order."""
    out = []
    for spec in specs:
        key, eq, values = spec.partition("=")
        vals = tuple(_value(v.strip()) for v in values.split(",") if v.strip())
        if not eq or not key.strip() or not vals:
            raise SweepError(f"--param {spec!r}: expected KEY=V1,V2,... (e.g. num_streams=1,2,4)")
        out.append(SweepParam(key.strip(), vals))
    if len({p.key for p in out}) != len(out):
        raise SweepError("each --param key may be given once")
    for p in out:
        check_key(p.key, p.values[0])
    return out


SWEEP_KEYS = ("replicator", "policy", "mode", "driver_jit", "broker_jit", "rate", "duration", "drain_timeout", "backlog",
              "profile", "compression", "standby",
              "failover_shift_s", MM2_NODES_KEY, *LINK_KEYS, *_SHORTHANDS)
"""``--param`` keys that are not flow settings (any other key is one, checked as the adapters check it;
``mm2_worker.<key>`` is a Connect worker setting of MirrorMaker 2)."""


def check_key(key: str, value: Any) -> None:
    """SweepError (with "did you mean") for a key that is neither a sweep key nor a valid flow setting."""
    if key in SWEEP_KEYS:
        return
    if key.startswith(MM2_WORKER_PREFIX) and len(key) > len(MM2_WORKER_PREFIX):
        return  # checked with the drill (validate_drill), as the drill file's own worker settings are
    from mirrordrill.harness.drill.preflight import flow_setting_problem
    problem = flow_setting_problem(key, value)
    if problem is None:
        return
    close = difflib.get_close_matches(key, SWEEP_KEYS, n=1, cutoff=0.7)
    if close:
        raise SweepError(f"--param {key!r}: unknown sweep key (did you mean {close[0]!r}?); sweep keys are "
                         f"{', '.join(SWEEP_KEYS)}, or any flow setting")
    raise SweepError(f"--param {key!r} is not a sweep key ({', '.join(SWEEP_KEYS)}) nor a valid flow setting: {problem}")


BUNDLED_ONLY_KEYS = ("mode", "driver_jit", "standby")
"""Sweep keys of the bundled replicator alone: MirrorMaker 2 has no execution mode, Spark driver or standby."""
STANDBY_VALUES = {"true": True, "false": False, "lease": "lease"}  # replication.standby, as --param spells it
NOT_APPLICABLE = "-"
"""A point's value for a key that means nothing to its replicator (MM2's ``driver_jit``)."""


def combinations(params: list[SweepParam]) -> list[dict]:
    """Every combination of the parameters' values, the last parameter varying fastest.

    A MirrorMaker 2 point takes no value of the bundled replicator's own keys (``mode``,
    ``driver_jit``): ``replicator=pyspark,mirrormaker2 --param driver_jit=c1,tiered`` runs MM2
    once per other setting, interleaved with ours, not twice the same drill under two labels.
    """
    out: list[dict] = []
    for vals in itertools.product(*(p.values for p in params)):
        combo = dict(zip([p.key for p in params], vals, strict=True))
        kind = combo.get("replicator")
        if kind in replicator_kinds() and not replicator_class(kind).uses_spark:  # mode, JIT: Spark's only
            combo.update({k: NOT_APPLICABLE for k in BUNDLED_ONLY_KEYS if k in combo})
        if combo not in out:
            out.append(combo)
    return out


def apply_params(drill: dict, params: dict[str, Any]) -> dict:
    """A copy of a drill file's content with one combination applied."""
    d = json.loads(json.dumps(drill))
    if "profile" in params:  # first: a swept duration or backlog is then taken as written
        from mirrordrill.harness.drill.profile import ProfileError, apply_profile
        try:
            d = apply_profile(d, params["profile"])
        except ProfileError as e:
            raise SweepError(f"profile={params['profile']!r}: {e}") from None
    kind = params.get("replicator", d.get("replication", {}).get("replicator"))
    for key, value in params.items():
        if key == "profile" or (key in BUNDLED_ONLY_KEYS and value == NOT_APPLICABLE):
            continue
        if key == "num_streams" and kind == "mirrormaker1":  # its --num.streams, not a flow's tasks.max
            d["replication"].setdefault("mirrormaker1", {})["streams"] = value
            continue
        if key == "replicator":
            if value not in (sweepable := sweepable_kinds()):
                raise SweepError(f"replicator={value!r}: valid values are {', '.join(sweepable)}")
            d["replication"]["replicator"] = value
        elif key == "policy":  # identity: the names MirrorMaker 1 keeps, so every kind runs the same drill
            if value not in ("default", "identity"):
                raise SweepError(f"policy={value!r}: valid values are default, identity (the replication policy)")
            d["replication"]["policy"] = value
        elif key == "mode":
            if value not in ("microbatch", "realtime"):
                raise SweepError(f"mode={value!r}: valid values are microbatch, realtime (pyspark's execution mode)")
            d["replication"]["mode"] = value
        elif key in ("driver_jit", "broker_jit") and value not in JIT_MODES:
            whose = "pyspark's driver JIT" if key == "driver_jit" else "the drill's brokers' JIT"
            raise SweepError(f"{key}={value!r}: valid values are {', '.join(JIT_MODES)} ({whose})")
        elif key == "driver_jit":
            d["replication"].setdefault("spark", {})["driver_jit"] = value
        elif key == "broker_jit":
            started = [c for c in d.get("clusters", {}).values() if isinstance(c, dict) and "existing" not in c]
            if not started:
                raise SweepError(f"broker_jit={value!r}: the drill starts no broker (every cluster is existing:)")
            for cluster in started:
                cluster["broker_jit"] = value
        elif key == "standby":
            if str(value).lower() not in STANDBY_VALUES:
                raise SweepError(f"standby={value!r}: valid values are {', '.join(STANDBY_VALUES)} (pyspark's standby driver)")
            d["replication"]["standby"] = STANDBY_VALUES[str(value).lower()]
        elif key == MM2_NODES_KEY:
            d["replication"].setdefault("mirrormaker2", {})["nodes"] = value
        elif key.startswith(MM2_WORKER_PREFIX):
            d["replication"].setdefault("mirrormaker2", {}).setdefault("worker", {})[key[len(MM2_WORKER_PREFIX):]] = value
        elif key == "rate":
            for p in d.get("load", {}).get("producers", []):
                p["rate"] = value
        elif key in ("duration", "drain_timeout"):
            d[key] = value
        elif key == "failover_shift_s":
            shift_incident(d, value)
        elif key == "backlog":
            for b in d.get("load", {}).get("backlog", []):
                b["records"] = value
        elif key == "compression":
            if value not in COMPRESSION_TYPES:
                raise SweepError(f"compression={value!r}: valid values are {', '.join(COMPRESSION_TYPES)}")
            # A record crosses the WAN as the sending side holds it: a replicator at the target fetches
            # the source topic's stored batches, one at the source sends what its producer compressed.
            sources = {f["source"] for f in d["replication"]["flows"]}
            for t in d.get("topics", []):
                if t.get("cluster") in sources:  # a topic calls "none" "uncompressed"
                    t.setdefault("config", {})["compression.type"] = "uncompressed" if value == "none" else value
            for f in d["replication"]["flows"]:
                f.setdefault("settings", {})["producer.compression.type"] = value
        elif key in LINK_KEYS:
            if not d.get("links"):
                raise SweepError(f"{key}={value!r}: the drill has no WAN link (links:) to set it on")
            for link in d["links"]:
                link[key] = value
                if key == "latency_ms":  # the drill's jitter may not exceed the swept latency
                    link["jitter_ms"] = min(int(link.get("jitter_ms", 0)), int(value))
        else:
            for f in d["replication"]["flows"]:
                f.setdefault("settings", {})[_SHORTHANDS.get(key, key)] = value
    return d


def shift_incident(drill: dict, seconds: Any) -> None:
    """Move a drill's first unplanned failover, every step after it and the load's end ``seconds`` later.

    Both replicators emit checkpoints on a fixed clock that starts with their process, and a drill
    kills the primary at a fixed second: every run of a drill then meets the same phase of that
    clock, and the phase, not the replicator, decides how much a group replays (the spread over
    one cycle is several times its low end:
    see docs/measurements/behind-the-code.md#harness-tools-sweep-params-py).
    Shifting the incident by a fraction of the interval per run samples the whole cycle; the steps
    before it, and what leads up to it, stay as written."""
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds < 0:
        raise SweepError(f"failover_shift_s={seconds!r}: expected seconds, 0 or more")
    steps = [s for s in drill.get("timeline") or [] if isinstance(s, dict)]
    first = next((i for i, s in enumerate(steps) if s.get("do") == "unplanned_failover"), None)
    if first is None:
        raise SweepError(f"failover_shift_s={seconds!r}: the drill has no unplanned_failover step to move")
    if steps[first].get("at") is None:
        raise SweepError(f"failover_shift_s={seconds!r}: the drill's unplanned_failover has no 'at' to move "
                         "(it follows the step before it)")
    for step in steps[first:]:
        if step.get("at") is not None:
            step["at"] = round(parse_duration(step["at"]) + seconds, 3)
    drill["duration"] = round(parse_duration(drill.get("duration", DEFAULT_DURATION_S)) + seconds, 3)


def validate_drill(drill: dict) -> None:
    """Validate a drill's content as the engine will read it (SweepError naming each problem's field)."""
    from mirrordrill.harness.drill.validate import ScenarioInvalid, load_scenario
    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "point.yaml"
        f.write_text(yaml.safe_dump(drill, sort_keys=False))
        try:
            load_scenario(f)
        except ScenarioInvalid as e:
            # The file and line are of a temporary copy: name the field, which the --param value set.
            raise SweepError("with the --param values applied: " +
                             "; ".join(f"{p.field}: {p.message}" for p in e.problems)) from None


def record_size(drill: dict) -> int:
    """The size of the drill's records: its backlog's, else its first fixed-size producer's."""
    for b in drill.get("load", {}).get("backlog", []):
        return int(b.get("record_size", 1024))
    for p in drill.get("load", {}).get("producers", []):
        size = (p.get("record_size") or {}).get("fixed")
        if size:
            return int(size)
    return 1024


def asked_rate(drill: dict) -> float | None:
    """Records/s the producers on the first flow's source are asked for (None with no producer there)."""
    source = drill["replication"]["flows"][0]["source"]
    rates = [float(p["rate"]) for p in drill.get("load", {}).get("producers", []) if p.get("cluster") == source]
    return sum(rates) if rates else None


def absolute_sample_files(drill: dict, drill_dir: Path) -> None:
    """Make the producers' relative ``payload: {file: ...}`` paths absolute: each point's drill file is
    written into the sweep folder, from where the drill's own folder is not where they are read."""
    for p in drill.get("load", {}).get("producers", []):
        payload = p.get("payload") if isinstance(p, dict) else None
        if isinstance(payload, dict) and isinstance(payload.get("file"), str):
            payload["file"] = str((drill_dir / payload["file"]).resolve())


def partitions(drill: dict) -> int:
    return max([int(t.get("partitions", 3)) for t in drill.get("topics", [])] or [3])
