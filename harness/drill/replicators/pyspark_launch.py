"""What a start of the bundled replicator needs: its jars, its environment, the driver JVM's class-data
archive, and (submitted to a Spark master) enough free task slots for its real-time flows."""

from __future__ import annotations

import hashlib
import shutil
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from mirrordrill.harness.lab.spark.deployment import check_task_slots
from mirrordrill.harness.lab.spark.submit import JavaOptions
from mirrordrill.primitives.bootstrap import Artifacts, Bootstrap, mirrordrill_home
from mirrordrill.primitives.import_root import child_pythonpath
from mirrordrill.primitives.jvm_flight_recording import FLIGHT_RECORDING_ENV
from mirrordrill.primitives.jvm_temp import temp_dir_flag
from mirrordrill.primitives.process import child_environment
from mirrordrill.replicator.config.settings import ReplicatorConfig
from mirrordrill.replicator.driver_jvm import CDS_ENV, archive_fingerprint, driver_jit_for, jit_flags


def cds_archive_path(java: str | None, jars: Sequence[Path]) -> Path:
    """The driver JVM's class-data archive (``replicator.driver_jvm``), one per JDK, Python, jar set and archive run."""
    key = hashlib.sha256("\n".join([str(java or shutil.which("java")), sys.executable,
                                     *map(str, jars), archive_fingerprint()]).encode()).hexdigest()[:12]
    return mirrordrill_home() / "spark-cds" / f"driver-{key}.jsa"


SUBMITTED_FLIGHT_REFUSAL = ("--jfr records a local master's driver, which runs the tasks too; on a Spark cluster the "
                            "executors copy the records (set spark.executor.extraJavaOptions there to record them)")


def replicator_environment(jars: Sequence[Path], cds_archive: Path, flight_recording: Path | None = None) -> dict[str, str]:
    """``python -m mirrordrill.replicator``'s environment: this checkout importable, the jars, loopback Spark, the
    archive, and the flight recording its driver JVM writes (``run --jfr``), if any."""
    env = child_environment()
    if flight_recording is not None:
        env[FLIGHT_RECORDING_ENV] = str(flight_recording)
    env["PYTHONPATH"] = child_pythonpath(env.get("PYTHONPATH"))
    env["MIRRORDRILL_REPLICATOR_JARS"] = ",".join(str(j) for j in jars)
    env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    env.setdefault(CDS_ENV, str(cds_archive))
    return env


def replicator_jars(artifacts: Artifacts | None) -> list[Path]:
    """The Spark-Kafka connector's jars and the replicator's own, from ``artifacts`` or the bootstrap cache."""
    if artifacts is not None:
        return [*artifacts.spark_kafka_jars, artifacts.replicator_jar]
    b = Bootstrap()
    return [*b.jvm_classpath("spark-kafka"), b.replicator_jar()]


def check_slots_per_process(status: dict, slots_per_process: int, needed: Mapping[str, int]) -> None:
    """Refuse, before any submit, real-time flows that the master's free task slots cannot all hold:
    per replicator process (``needed``: its real-time source partitions by process name) and together."""
    for name, partitions in needed.items():
        check_task_slots(status, partitions, slots_per_process, name)
    check_task_slots(status, sum(needed.values()), slots_per_process * len(needed),
                     f"the {len(needed)} replicator processes together")


def submitted_java_options(config: ReplicatorConfig, work: Path, our_cluster: bool) -> JavaOptions:
    """A submitted driver's JVM options, as the replicator gives its own driver JVM (its JIT and
    temporary folder, ``replicator.driver_jvm``), and on the standalone cluster mirrordrill starts
    (``our_cluster``) its executors' JIT, chosen the same way. ``work``: the driver's work folder,
    whose ``spark-tmp`` (made here) is where the replicator puts its own driver's temporary files.

    The executors there share the machine's cores with the brokers, the load and the drivers, and
    do what a local master's driver does (the tasks that copy the records), so the reasons for the
    driver's C1 hold for them: on the crash drill their JVMs' start to the first record copied
    took ten seconds less with it (docs/measurements/behind-the-code.md#harness-drill-replicators-pyspark-launch-py).
    On someone else's cluster the executors keep what its owners gave them."""
    tmp = work / "spark-tmp"  # replicator/process.py
    tmp.mkdir(parents=True, exist_ok=True)
    jit = jit_flags(driver_jit_for(config.driver_jit, [f.mode for f in config.enabled_flows()]))
    # the temporary folder: the driver's, and on this machine its executors' too (primitives.jvm_temp)
    return JavaOptions(driver=(temp_dir_flag(tmp), *jit), executor=(temp_dir_flag(tmp), *jit) if our_cluster else ())
