"""What a run folder records about how it was made: versions, the replicator's mode, the drill
file's hash, and the command that runs it again."""

from __future__ import annotations

import hashlib
import shlex
from importlib import metadata
from pathlib import Path

from mirrordrill.harness.drill.replicators import replicator_class
from mirrordrill.harness.drill.run_folder import SCENARIO_COPY
from mirrordrill.primitives.versions import kafka_version, spark_version


def project_version() -> str:
    try:
        return metadata.version("mirrordrill")
    except metadata.PackageNotFoundError:  # a checkout on PYTHONPATH that pip never installed
        return "unknown (not installed)"


def versions(kind: str) -> dict[str, str]:
    """mirrordrill's, Kafka's (brokers and MirrorMaker 2), Spark's (the bundled replicator) and
    the replicator's under test (the command replicator's is not known to mirrordrill)."""
    return {"mirrordrill": project_version(), "kafka": kafka_version(), "spark": spark_version(),
            "replicator": replicator_class(kind).version()}


def replicator_mode(kind: str, mode: str | None, mm2_exactly_once: bool = False) -> str:
    """The bundled replicator's mode (microbatch unless the file says realtime); MirrorMaker 2's
    delivery (at-least-once unless the file asks for its exactly-once mode); n/a for a command."""
    return replicator_class(kind).delivery_mode(mode, mm2_exactly_once)


def sha256_of(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def rerun_line(out_dir: Path, kind: str) -> str:
    """Runs this folder's own copy of the drill file (the original may have changed or moved)."""
    out_dir = Path(out_dir)
    return (f"mirrordrill run {shlex.quote(str(out_dir / SCENARIO_COPY))} --replicator {kind} "
            f"--out {shlex.quote(str(out_dir) + '-rerun')}")
