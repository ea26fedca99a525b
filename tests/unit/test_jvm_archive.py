"""A JVM's class-data archive: made once under a lock, kept only when its run ended normally."""

from __future__ import annotations

import pytest

from mirrordrill.primitives.jvm_archive import LazyArchive, dump_flags, fingerprint, making, map_flags


def test_an_archive_is_mapped_only_when_the_file_exists(tmp_path):
    archive = tmp_path / "broker.jsa"
    assert map_flags(archive) == [] and map_flags(None) == []
    archive.write_bytes(b"x")
    assert map_flags(archive)[0] == f"-XX:SharedArchiveFile={archive}"
    assert dump_flags(archive)[0] == f"-XX:ArchiveClassesAtExit={archive}"


def test_the_dump_becomes_the_archive_when_the_run_ends_normally_and_is_not_made_twice(tmp_path):
    archive = tmp_path / "cds" / "broker.jsa"
    with making(archive) as tmp:
        assert tmp is not None and tmp != archive
        tmp.write_bytes(b"classes")
    assert archive.read_bytes() == b"classes" and not tmp.exists()
    with making(archive) as again:
        assert again is None


def test_a_run_that_failed_leaves_no_archive_and_no_temporary_file(tmp_path):
    archive = tmp_path / "broker.jsa"
    with pytest.raises(RuntimeError), making(archive) as tmp:
        tmp.write_bytes(b"cut short")
        raise RuntimeError("broker killed")
    assert not archive.exists() and list(tmp_path.glob("*.tmp")) == []


def test_a_failed_making_is_said_once_and_the_jvms_start_without_an_archive(tmp_path):
    said: list[str] = []
    calls: list[object] = []

    def make(tmp):
        calls.append(tmp)
        raise OSError("no ports")
    lazy = LazyArchive(tmp_path / "broker.jsa", make, said.append)
    assert lazy.flags() == [] and lazy.flags() == []
    assert len(calls) == 1 and len(said) == 1 and "no ports" in said[0]


def test_a_new_jar_or_jdk_gets_a_new_archive(tmp_path):
    java, jar = tmp_path / "java", tmp_path / "kafka.jar"
    java.write_bytes(b"jvm")
    jar.write_bytes(b"v1")
    before = fingerprint(str(java), (jar,))
    assert fingerprint(str(java), (jar,)) == before
    jar.write_bytes(b"v2-longer")
    assert fingerprint(str(java), (jar,)) != before
