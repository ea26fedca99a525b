"""The driver JVM's start: its Spark settings, its class path, and its class-data archive.

A replicator start loads over twenty thousand classes (Spark, Scala, Kafka's client) before
its first record moves; on a busy 2-core machine that is a large part of the JVM's, the
SparkContext's and the first query's start. JDK 13+ dumps the classes a run loaded into an
archive when the JVM exits (``-XX:ArchiveClassesAtExit``) and maps it on later starts
(``-XX:SharedArchiveFile``), parsed and verified already.

Only classes of the JVM's own class loaders go into an archive: the jars given as
``spark.jars`` are loaded by a loader of Spark's and were parsed again on every start (1,500
classes of Kafka's client and connector;
see docs/measurements/behind-the-code.md#replicator-driver-jvm-py). So the driver also puts the
replicator's jars on its own class path (``driver_class_path``), except those Spark ships in
another version, which would shadow Spark's own (scala-library, spark-tags).

The replicator only maps an archive (``$MIRRORDRILL_SPARK_CDS``); it never dumps one itself,
since a dump runs after the Python process has gone and would outlive a replicator's stop.
``make_archive`` makes one with ``replicator.archive_run``, which replicates through a Kafka
broker the caller provides in both modes, so the archive holds what a replicator's start and
first records load; the harness does so once per JDK, Python, jar set and version of that
run. An archive made for another JDK or class path is refused by the JVM, which then starts
without it (the default ``-Xshare:auto``), never fails.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from mirrordrill.primitives.import_root import child_pythonpath
from mirrordrill.primitives.jvm_archive import map_flags
from mirrordrill.primitives.jvm_flight_recording import flags_from_environment
from mirrordrill.primitives.jvm_jit import jit_flags as primitive_jit_flags

if TYPE_CHECKING:
    from pyspark import SparkConf
    from pyspark.sql import SparkSession

CDS_ENV = "MIRRORDRILL_SPARK_CDS"
_ARCHIVE_RUN = Path(__file__).with_name("archive_run.py")
_VERSIONED_JAR = re.compile(r"(?P<artifact>.+)-\d[^-]*\.jar$")


C1_THRESHOLD_FLAGS = ["-XX:CompileThresholdScaling=0.1"]  # see jit_flags


def driver_jvm_flags(env: Mapping[str, str] | None = None) -> list[str]:
    """Map the archive ``$MIRRORDRILL_SPARK_CDS`` names, when it exists; record the flight recording
    ``$MIRRORDRILL_JFR`` names (``primitives.jvm_flight_recording``: ``run --jfr``), when set."""
    env = os.environ if env is None else env
    setting = env.get(CDS_ENV, "").strip()
    return [*(map_flags(Path(setting)) if setting else []), *flags_from_environment(env)]


def collect_start_up_garbage(spark: SparkSession) -> float:
    """One full collection of the driver's heap, at the end of its start-up; the seconds it took.

    Start-up (the session, the query's planning and code generation, the warm-up) fills the young
    generation with objects of which many live on; left alone, its first collection came a moment
    into the copying and stopped the driver (and a local master's tasks) for around 200 ms, every
    record in flight waiting, where the next one after it took under 20 ms
    (see docs/measurements/behind-the-code.md#replicator-driver-jvm-py). Collected here, before
    the driver counts as live or stands by, the pause falls in the start-up instead."""
    jvm = spark.sparkContext._jvm
    if jvm is None:
        return 0.0
    began = time.monotonic()
    jvm.java.lang.System.gc()
    return time.monotonic() - began


def jit_flags(mode: str) -> list[str]:
    """The driver JVM's JIT: ``c1`` compiles with the client compiler only, ``tiered`` as the JVM does.

    ``c1`` is the default of a process with a real-time flow (``driver_jit_for``).

    Until its first record moves, a replicator's JVM runs start-up code: Spark's session, the
    query's planning, code generation and the Kafka clients, most of it a few thousand times.
    Tiered compilation sends such code to C2 as well, which on a 2-core machine took more CPU
    than the start-up itself, and with C1 only the first record moved sooner on the first start
    and on a restart. C2's code is faster once compiled, but the capacity sweeps carried more with
    C1 only too: on two cores shared with the brokers, C2's faster code won less than its
    compiling took away from the copying
    (see docs/measurements/behind-the-code.md#replicator-driver-jvm-py). ``tiered`` is there
    for a process that runs for hours on cores to spare, where C2's faster code may pay back.

    With ``c1`` the driver also compiles a method after a tenth of the calls the JVM waits for
    (``-XX:CompileThresholdScaling=0.1``): a real-time task's per-record path (the source's poll,
    the projection, the sink's send) runs only once records come, at tens a second per task, and
    with the JVM's thresholds C1 was still compiling it ten seconds into a drill's load, the tasks
    running it interpreted meanwhile at twice their later CPU, on a machine the load's start had
    already filled; the drill's p99 came from those seconds. With the lower thresholds the
    compiling ended two seconds in and the start-up took no longer
    (see docs/measurements/behind-the-code.md#replicator-driver-jvm-py).

    The driver only: a Spark cluster's executors, which copy the records there, keep their JVMs'
    defaults (``spark.executor.extraJavaOptions`` is the cluster's), except on the standalone
    cluster a drill starts on this machine, whose executors the harness gives the same JIT
    (``harness.drill.replicators.pyspark_launch.submitted_java_options``)."""
    return [*primitive_jit_flags(mode), *(C1_THRESHOLD_FLAGS if mode == "c1" else [])]


def driver_jit_for(setting: str | None, modes: Iterable[str]) -> str:
    """The driver's JIT: the configuration's, else ``tiered`` where every flow copies in micro-batches, else ``c1``.

    A micro-batch flow runs its tasks on the driver's executor threads, so C2's faster code carries
    its records, and such a flow is chosen for throughput: over a backlog tiered carried more than
    C1 only at one stream, and at four streams it was a draw
    (see docs/measurements/behind-the-code.md#replicator-driver-jvm-py). A real-time flow keeps C1
    only, for the start (above): its records wait for it.
    """
    if setting is not None:
        return setting
    modes = list(modes)
    return "tiered" if modes and all(m == "microbatch" for m in modes) else "c1"


def artifact_of(jar: Path) -> str:
    """``kafka-clients-3.9.2.jar`` -> ``kafka-clients``; a jar with no version keeps its whole name."""
    match = _VERSIONED_JAR.match(Path(jar).name)
    return match["artifact"] if match else Path(jar).stem


def spark_jars_dir() -> Path:
    """The jars Spark itself runs with ($SPARK_HOME/jars, else the pyspark package's)."""
    home = os.environ.get("SPARK_HOME", "").strip()
    if home:
        return Path(home) / "jars"
    import pyspark
    return Path(pyspark.__file__).resolve().parent / "jars"


def driver_class_path(jars: list[Path], spark_jars: Path | None = None) -> list[Path]:
    """The replicator's jars the driver loads from its own class path: every one Spark does not ship itself."""
    folder = spark_jars_dir() if spark_jars is None else spark_jars
    shipped = {artifact_of(j) for j in folder.glob("*.jar")} if folder.is_dir() else set()
    return [Path(j) for j in jars if artifact_of(j) not in shipped]


def is_local(master: str) -> bool:
    """A local master (``local``, ``local[N]``, ``local[*]``): its executor runs in the driver JVM."""
    return master.strip().startswith("local")


def session_settings(jars: list[Path], tmp: Path, java_flags: list[str], master: str,
                     env: Mapping[str, str] | None = None) -> list[tuple[str, str]]:
    """The replicator's Spark settings, the same for its runs and for the run that makes its archive.

    ``spark.jars`` only for a cluster master, whose executors need the jars sent to them. A local
    master's executor runs in the driver JVM, whose class path holds them already (Spark's own
    copies of the others win there either way, its class loaders asking their parent first), and
    it fetched all 7 (16 MB) from the driver's file server into a folder of its own before the
    session was ready, a part of every start
    (see docs/measurements/behind-the-code.md#replicator-driver-jvm-py)."""
    env = os.environ if env is None else env
    return [
        *([] if is_local(master) else [("spark.jars", ",".join(str(j) for j in jars))]),
        # before Spark's jars on the launcher's class path; the archive needs the same list, in order
        ("spark.driver.extraClassPath", os.pathsep.join(str(j) for j in driver_class_path(jars))),
        ("spark.ui.enabled", env.get("MIRRORDRILL_SPARK_UI", "false")),
        ("spark.sql.shuffle.partitions", "2"),
        # streaming turns adaptive execution off anyway (with a warning per query start)
        ("spark.sql.adaptive.enabled", "false"),
        ("spark.ui.showConsoleProgress", "false"),
        ("spark.local.dir", str(tmp)),
        # Spark leaves an empty artifacts-<uuid> folder in the JVM's temp dir per session:
        # keep it in the replicator's own work folder rather than littering /tmp.
        ("spark.driver.extraJavaOptions", " ".join([f"-Djava.io.tmpdir={tmp}", *java_flags])),
        ("spark.driver.memory", env.get("MIRRORDRILL_SPARK_DRIVER_MEMORY", "1g")),
        ("spark.sql.streaming.stopTimeout", "10s"),
        # A retried task writes its range again from the batch start (duplicates); a failed
        # task fails the query instead, which restarts after what reached the target.
        ("spark.task.maxFailures", "1"),
        # Spark's status store writes a running stage's counts at most every 100 ms and then only
        # on its next event; a real-time stage has no next event until its tasks end, so its
        # numActiveTasks stayed at the first task's start until an executor heartbeat (up to
        # 10 s) and the query counted as live that much later (tasks running for seconds while
        # the stage said one;
        # see docs/measurements/behind-the-code.md#replicator-driver-jvm-py). 0 writes each event.
        ("spark.ui.liveUpdate.period", "0"),
    ]


APP_NAME = "mirrordrill-replicator"


class DriverStart:
    """The driver JVM started on a thread of its own as the process starts; the session made on it later.

    The JVM (Spark's launcher, then the driver with the py4j gateway) needs only the session
    settings: class path, memory, flags. The master's task slots follow the flows' partition
    counts, which the first topic sync reads over the WAN, so the master is given only when the
    session is made (``session``); the launch uses ``launch_master``, of the same kind (a local
    master's slot count changes nothing at launch, while spark-submit prepares a cluster master's
    environment then). Before, the JVM waited for pyspark's import, the first topic sync and the
    first heartbeat, all of which run on the main thread now while the JVM starts on the other
    core. That helps only where a core is idle: on the crash drill the first start gained a
    little, and the restart, with the brokers and the load busy on both cores, gained nothing:
    there the launch took as much longer as it began earlier
    (see docs/measurements/behind-the-code.md#replicator-driver-jvm-py).
    """

    def __init__(self, settings: list[tuple[str, str]], launch_master: str, jvm_up: Callable[[], None]):
        self.settings = settings
        self.launch_master = launch_master
        self.jvm_up = jvm_up
        self._error: BaseException | None = None
        self._launched = False
        self._thread = threading.Thread(target=self._launch, name="driver JVM start", daemon=True)

    def begin(self) -> DriverStart:
        self._thread.start()
        return self

    def _conf(self, master: str) -> SparkConf:
        from pyspark import SparkConf
        return SparkConf().setMaster(master).setAppName(APP_NAME).setAll(self.settings)

    def _launch(self) -> None:
        try:
            from pyspark import SparkContext
            SparkContext._ensure_initialized(conf=self._conf(self.launch_master))
            self._launched = True
            self.jvm_up()
        except BaseException as e:  # raised where the session is asked for
            self._error = e

    def session(self, master: str) -> SparkSession:
        """The Spark session on ``master``, once the JVM is up; the launch's error if it failed."""
        self._thread.join()
        if self._error is not None:
            raise self._error
        from pyspark.sql import SparkSession

        from mirrordrill.replicator.headers import register_long_bytes
        spark = SparkSession.builder.config(conf=self._conf(master)).getOrCreate()
        register_long_bytes(spark)
        return spark

    def abandon(self, timeout_s: float = 60.0) -> None:
        """No session was made (the process failed before it): stop the JVM now, not at the process's exit."""
        self._thread.join(timeout_s)
        if not self._launched:
            return
        from pyspark import SparkContext
        gateway = SparkContext._gateway
        if gateway is None or SparkContext._active_spark_context is not None:
            return
        SparkContext._gateway = None
        SparkContext._jvm = None
        try:
            gateway.shutdown()
        except Exception:
            pass  # the JVM also ends on its input's end, below
        proc = getattr(gateway, "proc", None)
        if proc is not None:
            proc.stdin.close()  # the gateway server exits at the end of its input
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()


def archive_fingerprint() -> str:
    """Changes whenever the archive run does: an archive made by an older run is made again."""
    return hashlib.sha256(_ARCHIVE_RUN.read_bytes()).hexdigest()[:12]


def make_archive(archive: Path, jars: list[Path], bootstrap: str | None = None, timeout_s: float = 600.0,
                 log_path: Path | None = None) -> bool:
    """Dump the archive (into a temporary file, renamed when complete); True when it exists afterwards.

    ``bootstrap``: a plaintext Kafka broker the run may create topics on and replicate through
    (without one, only the session and a SQL query's classes go in). The run's output goes to
    ``log_path`` when given."""
    archive = Path(archive)
    if archive.is_file():
        return True
    archive.parent.mkdir(parents=True, exist_ok=True)
    tmp = archive.with_name(f"{archive.name}.{os.getpid()}.tmp")
    env = dict(os.environ)
    env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    env["PYTHONPATH"] = child_pythonpath(env.get("PYTHONPATH"))
    argv = [sys.executable, "-m", "mirrordrill.replicator.archive_run", str(tmp), ",".join(map(str, jars)), bootstrap or ""]
    try:
        with open(log_path or os.devnull, "ab") as out:
            subprocess.run(argv, env=env, stdout=out, stderr=subprocess.STDOUT, timeout=timeout_s, check=True)
        if tmp.is_file() and tmp.stat().st_size > 0:
            os.replace(tmp, archive)
    except (subprocess.SubprocessError, OSError):
        pass  # no archive: replicators start without one, as before
    finally:
        tmp.unlink(missing_ok=True)
    return archive.is_file()


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4):
        print("usage: python -m mirrordrill.replicator.driver_jvm ARCHIVE JAR[,JAR...] [BOOTSTRAP]", file=sys.stderr)
        sys.exit(2)
    jars = [Path(j) for j in sys.argv[2].split(",") if j]
    sys.exit(0 if make_archive(Path(sys.argv[1]), jars, sys.argv[3] if len(sys.argv) == 4 else None) else 1)
