"""The bootstrap: clear errors for missing toolchains, no network work once installed."""

from pathlib import Path

import pytest

from mirrordrill.primitives.bootstrap import Bootstrap, BootstrapError


def test_missing_maven_is_named_with_the_fix(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    with pytest.raises(BootstrapError, match=r"'mvn' is not on PATH.*Install Maven"):
        Bootstrap(home=tmp_path / "cache", log=lambda m: None).jvm_classpath("broker")


def test_missing_go_is_named_with_the_fix(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    with pytest.raises(BootstrapError, match=r"'go' is not on PATH.*Install Go"):
        Bootstrap(home=tmp_path / "cache", log=lambda m: None).toxiproxy_server()


def test_missing_java_is_named_with_the_fix(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    with pytest.raises(BootstrapError, match=r"'java' is not on PATH.*Java runtime 17"):
        Bootstrap(home=tmp_path / "cache", log=lambda m: None).java()


def test_unknown_profile_is_rejected(tmp_path):
    with pytest.raises(ValueError, match="unknown JVM profile 'zookeeper'"):
        Bootstrap(home=tmp_path).jvm_classpath("zookeeper")


def test_second_run_needs_no_toolchain(artifacts, monkeypatch):
    # Once installed, resolving again must not call mvn/go/npm: with those tools gone from
    # PATH it still answers with the same paths (java is found through JAVA_HOME).
    java_home = Path(artifacts.java).resolve().parent.parent
    monkeypatch.setenv("JAVA_HOME", str(java_home))
    monkeypatch.setenv("PATH", "/nonexistent")
    b = Bootstrap(log=lambda m: pytest.fail(f"bootstrap did work on a second run: {m}"))
    assert b.jvm_classpath("broker") == artifacts.broker_classpath
    assert b.toxiproxy_server() == artifacts.toxiproxy_server
    assert b.jvm_classpath("spark-kafka") == artifacts.spark_kafka_jars
