"""The replicator empties a flow's query checkpoint at each query start, and deletes only a
``query`` folder it created and marked (issue 40): the checkpoint base is a setting that may
point anywhere. What decides is ``replicator.checkpoint_folder``, which ``FlowRuntime._start``
and ``FlowSupervisor.run`` call; the refusal comes before the driver JVM starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from mirrordrill.replicator.__main__ import main
from mirrordrill.replicator.checkpoint_folder import MARKER, CheckpointFolderRefused, fresh
from mirrordrill.replicator.process import FlowSupervisor


def spark_files(folder: Path) -> None:
    """What Spark leaves in a query's checkpoint."""
    (folder / "offsets").mkdir(parents=True)
    (folder / "offsets" / "0").write_text("v1\n{}")
    (folder / "metadata").write_text('{"id": "x"}')


def test_a_new_query_folder_is_created_and_marked(tmp_path):
    folder = fresh(tmp_path / "base" / "query")
    assert sorted(p.name for p in folder.iterdir()) == [MARKER]


def test_a_query_folder_the_replicator_made_is_emptied_for_the_next_query(tmp_path):
    folder = fresh(tmp_path / "query")
    spark_files(folder)
    fresh(folder)
    assert sorted(p.name for p in folder.iterdir()) == [MARKER]


def test_a_query_folder_without_the_marker_is_refused_and_untouched(tmp_path):
    folder = tmp_path / "query"
    spark_files(folder)
    (folder / "team-notes.txt").write_text("not the replicator's")
    with pytest.raises(CheckpointFolderRefused, match=r"did not make \(no .mirrordrill-replicator-query marker\).*"
                                                      r"nothing was deleted"):
        fresh(folder)
    assert sorted(p.name for p in folder.iterdir()) == ["metadata", "offsets", "team-notes.txt"]
    assert (folder / "offsets" / "0").read_text() == "v1\n{}"


def test_a_link_named_query_is_refused_and_its_target_untouched(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    fresh(elsewhere)  # even a marked folder: the link is not the replicator's
    (elsewhere / "keep").write_text("keep")
    (tmp_path / "base").mkdir()
    (tmp_path / "base" / "query").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(CheckpointFolderRefused, match="a link or a file"):
        fresh(tmp_path / "base" / "query")
    assert (elsewhere / "keep").read_text() == "keep"


def test_the_replicator_refuses_a_foreign_query_folder_before_it_starts(tmp_path, monkeypatch, capsys):
    base = tmp_path / "team-checkpoints"
    spark_files(base / "A__B" / "query")
    config = tmp_path / "replicator.yaml"
    config.write_text(f"""\
clusters:
  A: {{bootstrap_servers: 127.0.0.1:1}}
  B: {{bootstrap_servers: 127.0.0.1:2}}
flows:
  - {{source: A, target: B}}
checkpoint_dir: {base}
""")

    def no_driver(self):
        raise AssertionError("the driver JVM started although the checkpoint folder was refused")
    monkeypatch.setattr(FlowSupervisor, "_begin_driver", no_driver)
    code = main(["--config", str(config), "--workdir", str(tmp_path / "work"), "--jars", "unused.jar"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.startswith(f"replicator: {base / 'A__B' / 'query'} holds a query checkpoint the replicator did not "
                          "make"), err
    assert sorted(p.name for p in (base / "A__B" / "query").iterdir()) == ["metadata", "offsets"]
