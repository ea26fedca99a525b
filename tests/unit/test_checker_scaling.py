"""The checker benchmark's executor counts, and the table its standalone record becomes."""

from __future__ import annotations

import pytest

from mirrordrill.harness.drill.checker import bench as checker_bench
from mirrordrill.harness.tools.measurement_tables import checker_scaling_table


def test_executor_counts_are_a_list_of_positive_integers(capsys):
    assert checker_bench._counts("1,2") == (1, 2)
    for bad in ("0", "1,x", "-1"):
        with pytest.raises(SystemExit):
            checker_bench.main(["--records", "10", "--executors", bad])
        assert "--executors" in capsys.readouterr().err


def test_the_scaling_table_shows_each_executor_count_against_one_and_the_reference():
    record = {"date": "d", "commit": "abc", "machine": {"cores": 2, "load_average_start": [3.5, 1, 1],
                                                        "load_average_end": [4.0, 1, 1]},
              "figures": {"records": 1000, "reference": {"read_s": 1.0, "check_s": 1.0, "records_s": 500.0},
                          "spark_standalone": [
                              {"executors": 1, "wall_s": 10.0, "records_s": 100.0, "agrees": True},
                              {"executors": 2, "wall_s": 6.25, "records_s": 160.0, "agrees": False}]}}
    lines = checker_scaling_table(record, "r.json")
    assert "load average 3.5 and 4 at the start and the end" in lines[0]
    assert "| reference (columnar) | - | 2.0 | 500 | - |" in lines
    assert "| Spark | 1 | 10.0 | 100 | yes |" in lines
    assert "| Spark | 2 | 6.2 | 160 (1.60x of 1) | NO |" in lines
