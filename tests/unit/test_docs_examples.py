"""Every complete drill file in the manual (docs/, the drill-file guide and the tutorials) validates: the
worked examples stay true."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mirrordrill.harness.drill.validate import parse_scenario

DOCS = Path(__file__).resolve().parents[2] / "docs"
DOC = DOCS / "drill-files.md"
PAGES = [DOC, *sorted(p for p in DOCS.rglob("*.md") if p != DOC)]
EXAMPLES = [block for page in PAGES for block in re.findall(r"```yaml\n(.*?)```", page.read_text(), re.S)
            if block.startswith("name:")]


def test_the_reference_has_its_worked_examples():
    assert len(EXAMPLES) >= 5  # the guide's minimal drill and three worked examples, the first tutorial's drill


@pytest.mark.parametrize("text", EXAMPLES, ids=[t.splitlines()[0].removeprefix("name: ") for t in EXAMPLES])
def test_a_documented_drill_file_validates(text):
    parse_scenario(text, "a drill file of the manual")
