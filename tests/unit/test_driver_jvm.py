"""The driver JVM's class-data archive: mapped only when it exists, never dumped by the replicator itself."""

from __future__ import annotations

from replicator.driver_jvm import CDS_ENV, driver_jvm_flags, make_archive


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
