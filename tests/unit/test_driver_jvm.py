"""The driver JVM's class-data archive: mapped only when it exists, never dumped by the replicator itself."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mirrordrill.replicator.driver_jvm import (
    CDS_ENV,
    artifact_of,
    driver_class_path,
    driver_jvm_flags,
    jit_flags,
    make_archive,
    session_settings,
)


def test_an_existing_archive_is_mapped(tmp_path):
    archive = tmp_path / "driver.jsa"
    archive.write_bytes(b"x")
    flags = driver_jvm_flags({CDS_ENV: str(archive)})
    assert flags[0] == f"-XX:SharedArchiveFile={archive}"
    assert not any("ArchiveClassesAtExit" in f for f in flags)  # a dump would outlive the replicator's stop


def test_no_archive_or_no_setting_adds_no_flag(tmp_path):
    assert driver_jvm_flags({CDS_ENV: str(tmp_path / "missing.jsa")}) == []
    assert driver_jvm_flags({}) == []


def test_an_archive_already_there_is_not_made_again(tmp_path):
    archive = tmp_path / "driver.jsa"
    archive.write_bytes(b"kept")
    assert make_archive(archive, []) is True
    assert archive.read_bytes() == b"kept"


def test_the_driver_jit_is_c1_only_or_the_jvm_default():
    assert jit_flags("c1") == ["-XX:TieredStopAtLevel=1", "-XX:CompileThresholdScaling=0.1"]
    assert jit_flags("tiered") == []
    with pytest.raises(ValueError, match="c1 or tiered"):
        jit_flags("c2")


def test_a_jar_names_its_artifact_without_the_version():
    assert artifact_of(Path("/x/kafka-clients-3.9.2.jar")) == "kafka-clients"
    assert artifact_of(Path("spark-sql-kafka-0-10_2.13-4.2.0.jar")) == "spark-sql-kafka-0-10_2.13"
    assert artifact_of(Path("spark-tags_2.13-4.0.0.jar")) == "spark-tags_2.13"
    assert artifact_of(Path("mirrordrill-replicator-jvm.jar")) == "mirrordrill-replicator-jvm"


def test_the_driver_class_path_leaves_out_what_spark_ships_in_another_version(tmp_path):
    # Spark's own scala-library and spark-tags must not be shadowed by older copies put before them
    spark_jars = tmp_path / "jars"
    spark_jars.mkdir()
    for name in ("scala-library-2.13.18.jar", "spark-tags_2.13-4.2.0.jar", "spark-core_2.13-4.2.0.jar"):
        (spark_jars / name).write_bytes(b"")
    ours = [Path(f"/k/{n}") for n in ("commons-pool2-2.13.1.jar", "kafka-clients-3.9.2.jar", "scala-library-2.13.16.jar",
                                      "spark-sql-kafka-0-10_2.13-4.2.0.jar", "spark-tags_2.13-4.0.0.jar")]
    ours.append(Path("/r/mirrordrill-replicator-jvm.jar"))
    assert driver_class_path(ours, spark_jars) == [
        Path("/k/commons-pool2-2.13.1.jar"), Path("/k/kafka-clients-3.9.2.jar"),
        Path("/k/spark-sql-kafka-0-10_2.13-4.2.0.jar"), Path("/r/mirrordrill-replicator-jvm.jar")]


def test_the_replicator_and_its_archive_run_get_the_same_class_path(tmp_path, monkeypatch):
    # the JVM maps an archive only on the class path it was dumped with
    monkeypatch.setenv("SPARK_HOME", str(tmp_path))  # no jars folder: nothing shipped, all ours go on it
    jars = [tmp_path / "kafka-clients-3.9.2.jar", tmp_path / "mirrordrill-replicator-jvm.jar"]
    run = dict(session_settings(jars, tmp_path / "a", ["-XX:SharedArchiveFile=x.jsa"], "local[*]"))
    dump = dict(session_settings(jars, tmp_path / "b", ["-XX:ArchiveClassesAtExit=x.jsa"], "local[6]"))
    assert run["spark.driver.extraClassPath"] == dump["spark.driver.extraClassPath"] == os.pathsep.join(map(str, jars))
    assert "-XX:SharedArchiveFile=x.jsa" in run["spark.driver.extraJavaOptions"]


def test_only_a_cluster_master_has_the_jars_sent_to_its_executors(tmp_path, monkeypatch):
    monkeypatch.setenv("SPARK_HOME", str(tmp_path))
    jars = [tmp_path / "kafka-clients-3.9.2.jar", tmp_path / "mirrordrill-replicator-jvm.jar"]
    cluster = dict(session_settings(jars, tmp_path, [], " spark://127.0.0.1:7077"))
    assert cluster["spark.jars"] == ",".join(map(str, jars))
    for local in ("local", "local[*]", "local[3]"):
        settings = dict(session_settings(jars, tmp_path, [], local))
        assert "spark.jars" not in settings  # the executor is the driver JVM: its class path has them
        assert settings["spark.driver.extraClassPath"] == os.pathsep.join(map(str, jars))


class _Launches:
    """Stands in for pyspark's gateway launch: records the conf, or fails as a missing Java does."""

    def __init__(self, error: BaseException | None = None):
        self.error = error
        self.confs: list[dict[str, str]] = []

    def __call__(self, instance=None, gateway=None, conf=None):
        if self.error is not None:
            raise self.error
        self.confs.append(dict(conf.getAll()))


def test_the_driver_launches_with_the_settings_and_the_launch_master(monkeypatch):
    from pyspark import SparkContext

    from mirrordrill.replicator.driver_jvm import DriverStart
    launches = _Launches()
    monkeypatch.setattr(SparkContext, "_ensure_initialized", launches)
    # as in a replicator process, no JVM yet: a suite's earlier in-process session would give SparkConf its defaults
    monkeypatch.setattr(SparkContext, "_jvm", None)
    marks = []
    DriverStart([("spark.driver.memory", "1g")], "local[*]", lambda: marks.append("jvm")).begin()._thread.join(30)
    assert launches.confs == [{"spark.master": "local[*]", "spark.app.name": "mirrordrill-replicator",
                               "spark.driver.memory": "1g"}]
    assert marks == ["jvm"]


def test_a_failed_launch_is_raised_where_the_session_is_asked_for_and_abandon_has_nothing_to_stop(monkeypatch):
    from pyspark import SparkContext

    from mirrordrill.replicator.driver_jvm import DriverStart
    monkeypatch.setattr(SparkContext, "_ensure_initialized", _Launches(RuntimeError("Java gateway process exited")))
    monkeypatch.setattr(SparkContext, "_jvm", None)
    marks = []
    driver = DriverStart([], "local[*]", lambda: marks.append("jvm")).begin()
    with pytest.raises(RuntimeError, match="Java gateway process exited"):
        driver.session("local[2]")
    assert marks == []
    driver.abandon(timeout_s=5)  # nothing was launched: returns without touching pyspark's gateway
