"""Every complete drill file in docs/drill-files.md validates: the reference's examples stay true."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.drill.validate import parse_scenario

DOC = Path(__file__).resolve().parents[2] / "docs" / "drill-files.md"
EXAMPLES = [block for block in re.findall(r"```yaml\n(.*?)```", DOC.read_text(), re.S) if block.startswith("name:")]


def test_the_reference_has_its_worked_examples():
    assert len(EXAMPLES) >= 4  # the minimal drill and the three worked examples


@pytest.mark.parametrize("text", EXAMPLES, ids=[t.splitlines()[0].removeprefix("name: ") for t in EXAMPLES])
def test_a_documented_drill_file_validates(text):
    parse_scenario(text, f"{DOC.name} example")
