"""The drill-file format version: a newer or older file is refused in one line that says what to do."""

from __future__ import annotations

from pathlib import Path

import pytest

from mirrordrill.harness.drill.file_format import FORMAT
from mirrordrill.harness.drill.validate import ScenarioInvalid, check_text

SHIPPED = Path(__file__).resolve().parents[2] / "scenarios"


def _quickstart_with(format_line: str) -> str:
    text = (SHIPPED / "quickstart.yaml").read_text()
    return text.replace("format: 1\n", format_line)


def _only_problem(text: str):
    with pytest.raises(ScenarioInvalid) as e:
        check_text(text, "drills/q.yaml")
    [problem] = e.value.problems
    return problem


def test_every_shipped_drill_states_the_format_this_version_writes():
    for path in sorted(SHIPPED.glob("*.yaml")):
        assert f"\nformat: {FORMAT}\n" in path.read_text(), path


def test_a_file_without_format_is_read_as_format_1():
    assert check_text(_quickstart_with(""), "drills/q.yaml").scenario.format == 1


def test_a_newer_format_says_upgrade_before_naming_any_field_it_does_not_know():
    text = _quickstart_with("format: 2\n") + "a_field_of_format_2: true\n"
    problem = _only_problem(text)
    assert (problem.file, problem.field) == ("drills/q.yaml", "format")
    assert problem.line == text.splitlines().index("format: 2") + 1
    assert "newer than this mirrordrill reads (1)" in problem.message and "upgrade mirrordrill" in problem.message


def test_an_older_format_points_at_the_changelog():
    problem = _only_problem(_quickstart_with("format: 0\n"))
    assert "older than any this mirrordrill reads" in problem.message and "CHANGELOG.md" in problem.message


@pytest.mark.parametrize("value", ["'1'", "1.5", "true", "[1]"])
def test_a_format_that_is_not_a_whole_number_is_refused_with_the_fix(value):
    problem = _only_problem(_quickstart_with(f"format: {value}\n"))
    assert problem.field == "format" and "write 'format: 1'" in problem.message
