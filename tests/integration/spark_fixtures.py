"""A session-scoped local SparkSession for the checker's Spark tests (import the fixture)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def spark(session_workdir):
    """Local Spark sized for a shared 2-core machine; stopped at the end of the session."""
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
               .config("spark.driver.extraJavaOptions", f"-Djava.io.tmpdir={scratch}")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        session.stop()
