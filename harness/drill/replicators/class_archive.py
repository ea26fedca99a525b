"""The driver's class-data archive, made once per machine with a broker of its own to replicate through.

``replicator.driver_jvm.make_archive`` dumps the classes of a short replication run; that run
needs a Kafka broker it may create topics on. The drill's own clusters are not lent to it (a
team's existing cluster is not ours to write to, and a topic left on a drill's cluster could be
replicated by the drill), so a one-broker cluster starts on loopback for the run and stops
after it, on every exit path (``Environment`` as a context manager). About a minute, once.
"""

from __future__ import annotations

import fcntl
import shutil
from collections.abc import Callable
from pathlib import Path

from mirrordrill.primitives.bootstrap import Artifacts, mirrordrill_home
from mirrordrill.replicator.driver_jvm import make_archive

_CLUSTER = "archive"


def make_class_archive(archive: Path, jars: list[Path], log: Callable[[str], None],
                       artifacts: Artifacts | None = None) -> bool:
    """Make ``archive`` (True when it exists afterwards); its run's output goes to ``archive``.log.

    Replicators and tests in other processes may ask for the same archive at once: one makes it
    while the others wait on its lock, then find it made (a second maker would also delete the
    first one's broker folder, which is named after the archive)."""
    archive = Path(archive)
    archive.parent.mkdir(parents=True, exist_ok=True)
    with open(archive.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return archive.is_file() or _make(archive, jars, log, artifacts)


def _make(archive: Path, jars: list[Path], log: Callable[[str], None], artifacts: Artifacts | None) -> bool:
    from mirrordrill.harness.lab.brokers.cluster import ClusterSpec
    from mirrordrill.harness.lab.environment import Environment, TopologySpec

    run_log = archive.with_suffix(".log")
    workdir = mirrordrill_home() / "tmp" / f"class-archive-{archive.stem}"
    shutil.rmtree(workdir, ignore_errors=True)
    try:
        with Environment(TopologySpec(clusters=(ClusterSpec(_CLUSTER),)), workdir, artifacts=artifacts) as env:
            return make_archive(archive, jars, env.cluster(_CLUSTER).bootstrap, log_path=run_log)
    except Exception as e:  # the archive only speeds starts up: without a broker, the session's classes still help
        log(f"no broker for the class-data archive's run ({e}); making it with Spark's session classes only")
        return make_archive(archive, jars, log_path=run_log)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
