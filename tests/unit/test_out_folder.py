"""``--out`` is a new folder, an empty one, or one mirrordrill made (issue 40, "the machine is safe"):
anything else is refused before anything starts, with the reason, and nothing in it is deleted."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from mirrordrill.harness.cli import commands as cli
from mirrordrill.harness.drill import engine, run_folder
from mirrordrill.harness.drill.engine import Drill
from mirrordrill.harness.drill.run_folder import MARKER, OutFolderRefused, clear_previous_run, refusal, take
from mirrordrill.harness.drill.validate import load_scenario

REPO = Path(__file__).resolve().parents[2]
QUICKSTART = REPO / "scenarios" / "quickstart.yaml"


def a_checkout(root: Path) -> dict[Path, str]:
    """A folder shaped like a checkout: the names a run writes are there, and none is the run's."""
    files = {root / "replicator" / "app.py": "the replicator's source\n", root / "env" / "notes.txt": "mine\n",
             root / "histories" / "h.txt": "mine\n", root / "README.md": "# a project\n",
             root / "summary.json": "{}\n", root / "scenarios" / "quickstart.yaml": QUICKSTART.read_text()}
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return files


def untouched(files: dict[Path, str]) -> bool:
    return all(p.is_file() and p.read_text() == text for p, text in files.items())


# --- the rule -----------------------------------------------------------------------------
def test_a_new_folder_is_taken_and_marked(tmp_path):
    out = tmp_path / "runs" / "new"
    assert refusal(out) is None
    assert take(out, "mirrordrill run") == out
    marker = json.loads((out / MARKER).read_text())
    assert marker["made_by"] == "mirrordrill run" and marker["created"]


def test_an_empty_folder_is_taken(tmp_path):
    assert refusal(tmp_path) is None
    take(tmp_path, "mirrordrill run")
    assert (tmp_path / MARKER).is_file()


def test_a_folder_an_earlier_run_made_is_taken_again(tmp_path):
    take(tmp_path, "mirrordrill run")
    (tmp_path / "summary.json").write_text("{}")
    assert refusal(tmp_path) is None
    take(tmp_path, "mirrordrill run")


def test_a_foreign_folder_with_files_is_refused_and_untouched(tmp_path):
    files = a_checkout(tmp_path)
    reason = refusal(tmp_path)
    assert reason is not None and "did not make" in reason and MARKER in reason and "new or empty folder" in reason
    with pytest.raises(OutFolderRefused, match="did not make"):
        take(tmp_path, "mirrordrill run")
    assert untouched(files) and not (tmp_path / MARKER).exists()


def test_a_file_instead_of_a_folder_is_refused(tmp_path):
    path = tmp_path / "out"
    path.write_text("not a folder")
    with pytest.raises(OutFolderRefused, match="a file, not a folder"):
        take(path, "mirrordrill run")
    assert path.read_text() == "not a folder"


def test_clearing_an_earlier_run_removes_only_the_names_a_run_writes(tmp_path):
    take(tmp_path, "mirrordrill run")
    for name in run_folder.RUN_FOLDERS:
        (tmp_path / name).mkdir()
        (tmp_path / name / "old").write_text("old")
    (tmp_path / "summary.json").write_text("{}")
    (tmp_path / "notes.md").write_text("the user's own note")
    clear_previous_run(tmp_path, ("summary.json",))
    assert sorted(p.name for p in tmp_path.iterdir()) == [MARKER, "notes.md"]


def test_clearing_refuses_a_folder_without_the_marker(tmp_path):
    files = a_checkout(tmp_path)
    with pytest.raises(OutFolderRefused, match="nothing deleted"):
        clear_previous_run(tmp_path, ("summary.json",))
    assert untouched(files)


def test_a_link_named_as_a_run_folder_is_removed_not_followed(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep").write_text("keep")
    out = take(tmp_path / "out", "mirrordrill run")
    (out / "env").symlink_to(elsewhere, target_is_directory=True)
    clear_previous_run(out, ())
    assert not (out / "env").exists() and (elsewhere / "keep").read_text() == "keep"


# --- the commands -------------------------------------------------------------------------
def test_run_out_dot_in_a_checkout_exits_2_and_deletes_nothing(tmp_path, monkeypatch, capsys, nothing_starts):
    files = a_checkout(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert cli.main(["run", "scenarios/quickstart.yaml", "--out", "."]) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert err.startswith(f"mirrordrill run: --out {tmp_path.resolve()}: this folder holds files mirrordrill did not "
                          "make"), err
    assert len(err.strip().splitlines()) == 1, err
    assert untouched(files)


@pytest.mark.parametrize("argv", [
    ["run", str(QUICKSTART)],
    ["sweep", str(QUICKSTART), "--param", "replicator=pyspark,mirrormaker2"],
    ["calibrate", str(QUICKSTART), "--runs", "1"],
    ["bench", "drills", "--drills", str(QUICKSTART), "--runs", "1"],
    ["bench", "startup", "--drills", str(QUICKSTART), "--runs", "1"],
    ["report", str(REPO / "tests" / "unit" / "fixtures")],
], ids=lambda a: " ".join(a[:2]) if a[0] == "bench" else a[0])
def test_every_out_option_refuses_a_folder_with_a_file(argv, tmp_path, capsys, nothing_starts):
    out = tmp_path / "out"
    out.mkdir()
    (out / "mine.txt").write_text("the user's file")
    assert cli.main([*argv, "--out", str(out)]) == cli.EXIT_USAGE
    assert "did not make" in capsys.readouterr().err
    assert [p.name for p in out.iterdir()] == ["mine.txt"] and (out / "mine.txt").read_text() == "the user's file"


def test_the_engine_refuses_a_foreign_folder_before_anything(tmp_path, monkeypatch):
    """Defence in depth: a tool calling the engine without the CLI's check deletes nothing either."""
    files = a_checkout(tmp_path)

    def no_environment(*args, **kwargs):
        raise AssertionError("the drill started although its folder was refused")
    monkeypatch.setattr(engine, "Environment", no_environment)
    drill = Drill(load_scenario(QUICKSTART), QUICKSTART, tmp_path)
    with pytest.raises(OutFolderRefused):
        drill.run()
    assert untouched(files)


def test_a_sweep_point_folder_is_marked_by_the_drill_that_runs_in_it(tmp_path, monkeypatch):
    class Started(BaseException):
        pass

    def stop_here(*args, **kwargs):
        raise Started()
    monkeypatch.setattr(engine, "Environment", stop_here)
    point = tmp_path / "sweep" / "points" / "01-replicator=pyspark"
    point.mkdir(parents=True)
    shutil.copy(QUICKSTART, tmp_path / "drill.yaml")
    with pytest.raises(Started):
        Drill(load_scenario(tmp_path / "drill.yaml"), tmp_path / "drill.yaml", point).run()
    assert json.loads((point / MARKER).read_text())["made_by"] == "mirrordrill run"
