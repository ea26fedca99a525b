"""A local SparkSession for the checker's Spark tests, one per module that imports the fixture."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def spark(session_workdir):
    """Local Spark sized for a shared 2-core machine; stopped after the module.

    Not kept for the session: an idle driver JVM left behind kept compiling in the background and
    took CPU from the tests that followed it on the same worker. C1 only, for the same reason:
    these are short queries on small inputs, where C2's compilations cost more than they save."""
    from pyspark.sql import SparkSession

    scratch = session_workdir / "spark-tmp"  # Spark's temp folders, kept out of /tmp
    scratch.mkdir(exist_ok=True)

    session = (SparkSession.builder.master("local[2]")
               .appName("mirrordrill-checker-tests")
               .config("spark.driver.memory", "1g")
               .config("spark.sql.shuffle.partitions", "4")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.local.dir", str(scratch))
               .config("spark.driver.extraJavaOptions", f"-Djava.io.tmpdir={scratch} -XX:TieredStopAtLevel=1")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        session.stop()
