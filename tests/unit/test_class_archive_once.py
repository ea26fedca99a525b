"""The driver's class-data archive is made once when several makers ask for it at the same time."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from mirrordrill.harness.drill.replicators import class_archive


def test_concurrent_makers_make_the_archive_once_and_all_find_it(tmp_path, monkeypatch):
    made: list[Path] = []

    def slow_make(archive: Path, jars, log, artifacts) -> bool:
        made.append(archive)
        time.sleep(0.3)  # long enough for the other makers to arrive while this one works
        archive.write_bytes(b"archive")
        return True

    monkeypatch.setattr(class_archive, "_make", slow_make)
    archive = tmp_path / "spark-cds" / "driver-x.jsa"
    results: list[bool] = []
    makers = [threading.Thread(target=lambda: results.append(class_archive.make_class_archive(archive, [], print)))
              for _ in range(3)]
    for t in makers:
        t.start()
    for t in makers:
        t.join()
    assert made == [archive]
    assert results == [True, True, True]
