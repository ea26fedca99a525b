"""The suite's parallel part starts its long modules first (tests/conftest.py, tests/suite.py)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import _MODULE_SECONDS, module_start_order
from tests.suite import parts

REPO = Path(__file__).resolve().parents[2]


def test_measured_modules_start_first_longest_first_then_by_folder():
    paths = ["tests/unit/test_a.py", "tests/integration/test_short.py", "tests/containers/test_c.py",
             "tests/integration/test_long.py", "tests/unit/test_long_unit.py"]
    ranks = module_start_order(paths, {"tests/integration/test_long.py": 300.0, "tests/unit/test_long_unit.py": 500.0})
    assert sorted(paths, key=ranks.__getitem__) == [
        "tests/unit/test_long_unit.py", "tests/integration/test_long.py",
        "tests/integration/test_short.py", "tests/containers/test_c.py", "tests/unit/test_a.py"]


def test_every_measured_module_exists():
    # a renamed module would silently lose its place at the front
    modules = json.loads(_MODULE_SECONDS.read_text())["figures"]["modules"]
    assert [m for m in modules if not (REPO / m).is_file()] == []


def test_the_parallel_part_keeps_the_collection_order():
    (_, parallel), *_ = parts([])
    assert parallel[parallel.index("--dist") + 1] == "loadscope" and "--no-loadscope-reorder" in parallel


def test_only_the_last_part_renders_the_report_of_all_parts():
    *first, (_, last) = parts([])
    assert all("--no-report-render" in args for _, args in first) and "--no-report-render" not in last
