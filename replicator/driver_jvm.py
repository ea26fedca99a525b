"""Class-data sharing for the driver JVM: Spark's classes mapped from an archive, not parsed again.

A replicator start loads well over ten thousand classes (Spark, Scala, Kafka's client) before
its first query; on a busy 2-core machine that is a large part of the JVM's and the
SparkContext's start. JDK 13+ dumps the classes a run loaded into an archive when the JVM
exits (``-XX:ArchiveClassesAtExit``) and maps it on later starts (``-XX:SharedArchiveFile``).

The replicator only maps an archive (``$MIRRORDRILL_SPARK_CDS``); it never dumps one itself,
since a dump runs after the Python process has gone and would outlive a replicator's stop.
``make_archive`` (``python -m replicator.driver_jvm ARCHIVE``) makes one with a short Spark
run that waits for its JVM; the harness does so once per JDK, Python and jar set. An archive
made for another JDK or class path is refused by the JVM, which then starts without it (the
default ``-Xshare:auto``), never fails.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

CDS_ENV = "MIRRORDRILL_SPARK_CDS"
# the JVM's own notes about the archive (path mismatch, not mapped) say nothing a user can act on
_QUIET = ["-Xlog:cds=off", "-Xlog:cds+dynamic=off"]


def driver_jvm_flags(env: Mapping[str, str] | None = None) -> list[str]:
    """Map the archive ``$MIRRORDRILL_SPARK_CDS`` names, when it exists."""
    setting = (os.environ if env is None else env).get(CDS_ENV, "").strip()
    if setting and Path(setting).is_file():
        return [f"-XX:SharedArchiveFile={setting}", *_QUIET]
    return []


# A short run through the classes a replicator start needs: session, SQL, code generation, the
# expressions ``spark_stream.transform`` uses. The Kafka connector's classes come from
# ``spark.jars``, a class loader of Spark's own, and stay out of the archive either way.
_WARM_RUN = """
import sys
from pyspark import SparkConf, SparkContext
from pyspark.sql import SparkSession
conf = SparkConf().setMaster("local[2]").setAppName("mirrordrill-cds").setAll([
    ("spark.ui.enabled", "false"), ("spark.jars", sys.argv[2]), ("spark.sql.shuffle.partitions", "2"),
    ("spark.driver.extraJavaOptions", "-XX:ArchiveClassesAtExit=" + sys.argv[1] + " -Xlog:cds=off")])
spark = SparkSession.builder.config(conf=conf).getOrCreate()
spark.range(100).selectExpr("concat('t.', cast(id as string)) as topic", "unhex(lpad(hex(id), 16, '0')) as v",
    "filter(array(named_struct('key', 'k', 'value', cast('x' as binary))), h -> h.key NOT IN ('a'))").collect()
proc = SparkContext._gateway.proc
spark.stop()
proc.stdin.close()  # the JVM exits on end of input, then writes the archive
proc.wait()
"""


def make_archive(archive: Path, jars: list[Path], timeout_s: float = 600.0) -> bool:
    """Dump the archive (into a temporary file, renamed when complete); True when it exists afterwards."""
    archive = Path(archive)
    if archive.is_file():
        return True
    archive.parent.mkdir(parents=True, exist_ok=True)
    tmp = archive.with_name(f"{archive.name}.{os.getpid()}.tmp")
    env = dict(os.environ)
    env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    try:
        subprocess.run([sys.executable, "-c", _WARM_RUN, str(tmp), ",".join(map(str, jars))], env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=timeout_s, check=True)
        if tmp.is_file() and tmp.stat().st_size > 0:
            os.replace(tmp, archive)
    except (subprocess.SubprocessError, OSError):
        pass  # no archive: replicators start without one, as before
    finally:
        tmp.unlink(missing_ok=True)
    return archive.is_file()


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print("usage: python -m replicator.driver_jvm ARCHIVE JAR[,JAR...]", file=sys.stderr)
        sys.exit(2)
    sys.exit(0 if make_archive(Path(sys.argv[1]), [Path(j) for j in sys.argv[2].split(",") if j]) else 1)
