"""A measurement record: what the manual's tables are generated from, so what a ``--record`` writes
must carry the sitting's facts, hide secrets, and be refused when it is not a record this code reads."""

from __future__ import annotations

import json
import re

import pytest

from mirrordrill.harness.cli.commands import build_parser
from mirrordrill.harness.drill.checker import bench as checker_bench
from mirrordrill.primitives.measurement_record import FORMAT, RECORDS_DIR, Sitting, read_record, read_records


def test_a_record_written_into_a_folder_is_named_by_kind_and_date_and_carries_the_sitting(tmp_path):
    sitting = Sitting.begin(["mirrordrill"], ["bench", "drills", "--sasl-password", "hunter2", "--record"])
    path = sitting.write("bench-drills", {"cells": [{"drill": "quickstart"}]}, tmp_path)
    assert re.fullmatch(r"bench-drills-\d{4}-\d\d-\d\dT\d{6}Z\.json", path.name)
    doc = read_record(path)
    assert doc["format"] == FORMAT and doc["kind"] == "bench-drills"
    assert doc["figures"] == {"cells": [{"drill": "quickstart"}]}
    assert "hunter2" not in path.read_text()
    assert doc["command"][:3] == ["mirrordrill", "bench", "drills"]
    assert re.fullmatch(r"[0-9a-f]{40}", doc["commit"])  # the tests run in a checkout
    machine = doc["machine"]
    assert machine["cores"] >= 1 and machine["memory_gib"] > 0
    assert len(machine["load_average_start"]) == 3 and len(machine["load_average_end"]) == 3


def test_a_record_path_ending_in_json_is_the_file_written(tmp_path):
    path = Sitting.begin(["x"], []).write("sweep", {"points": []}, tmp_path / "deep" / "mine.json")
    assert path == tmp_path / "deep" / "mine.json"
    assert read_records(tmp_path / "deep", "sweep")[0][0]["figures"] == {"points": []}
    assert read_records(tmp_path / "deep", "calibrate") == []


def test_a_file_of_another_format_is_refused(tmp_path):
    (tmp_path / "old.json").write_text(json.dumps({"format": FORMAT + 1, "kind": "sweep", "figures": {}}))
    with pytest.raises(ValueError, match="not a measurement record"):
        read_records(tmp_path, "sweep")


@pytest.mark.parametrize("argv", [["bench", "drills"], ["bench", "startup"], ["sweep", "d.yaml", "--param", "rate=1"],
                                  ["calibrate", "d.yaml"]], ids=" ".join)
def test_the_measuring_commands_take_record_defaulting_to_the_manuals_folder(argv):
    parser = build_parser()
    assert parser.parse_args(argv).record is None
    assert parser.parse_args([*argv, "--record"]).record == str(RECORDS_DIR)
    assert parser.parse_args([*argv, "--record", "out.json"]).record == "out.json"


def test_the_checker_benchmark_records_what_it_printed(tmp_path, capsys):
    assert checker_bench.main(["--records", "3000", "--no-spark", "--record", str(tmp_path)]) == 0
    [path] = tmp_path.glob("bench-checker-*.json")
    doc = read_record(path)
    assert doc["command"][:3] == ["python", "-m", "mirrordrill.harness.drill.checker.bench"]
    reference = doc["figures"]["reference"]
    assert doc["figures"]["records"] == 3000 and reference["records_s"] > 0
    assert f"{reference['records_s']:,.0f} records/s verified" in capsys.readouterr().out
