"""Code and drill files say why; the sittings that measured something are records and manual pages.

A dated figure in a comment goes stale without anyone noticing (the code moves on, the sentence
stays), so product code and drill comments may name a record's file but hold no date of a sitting.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PRODUCT = ("primitives", "replicator", "loadgen", "harness", "reports")
DATE = re.compile(r"20\d\d-[01]\d-[0-3]\d")
# a record's file name, e.g. docs/measurements/bench-drills-2026-11-28.json: a pointer, not a sitting
RECORD_NAME = re.compile(r"[\w.-]*20\d\d-[01]\d-[0-3]\d[\w.-]*\.json")


def dated(text: str) -> list[str]:
    """Each line of ``text`` holding a date that is not part of a record's file name."""
    return [line.strip() for line in text.splitlines() if DATE.search(RECORD_NAME.sub("", line))]


def drill_comments(text: str) -> str:
    """A drill file's comment lines: its header and the notes beside its settings."""
    return "\n".join(line for line in text.splitlines() if line.lstrip().startswith("#"))


def test_the_rule_finds_a_dated_sentence_and_allows_a_record_name():
    assert dated("# p99 4.8 s (measured 2026-11-26 on 2 cores)") == ["# p99 4.8 s (measured 2026-11-26 on 2 cores)"]
    assert dated("# see docs/measurements/bench-drills-2026-11-28.json") == []
    assert dated('when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")') == []


@pytest.mark.parametrize("package", PRODUCT)
def test_no_product_module_holds_a_dated_measurement(package):
    found = {str(p.relative_to(REPO)): lines for p in sorted((REPO / package).rglob("*.py"))
             if (lines := dated(p.read_text()))}
    assert found == {}, "move the sitting to a record or docs/measurements/ and point to it"


@pytest.mark.parametrize("drill", sorted((REPO / "scenarios").glob("*.yaml")), ids=lambda p: p.name)
def test_no_drill_comment_holds_a_dated_sitting(drill):
    assert dated(drill_comments(drill.read_text())) == [], \
        f"move the sitting to docs/measurements/calibration-{drill.stem}.json and point to it"


def test_the_limits_calibrate_suggests_name_their_record_and_no_date():
    from types import SimpleNamespace

    from mirrordrill.harness.tools.calibrate.run import header
    run = SimpleNamespace(replicator="pyspark", replicator_mode="realtime")
    record = Path("docs/measurements/calibrate-2026-12-04T081500Z.json")
    pasted = header(Path("scenarios/quickstart.yaml"), [run, run, run], 0.5, "short", record)  # type: ignore[list-item]
    assert "the sitting: docs/measurements/calibrate-2026-12-04T081500Z.json" in pasted
    assert dated(drill_comments(pasted)) == []
    assert "--record" in header(Path("scenarios/quickstart.yaml"), [run], 0.5)  # type: ignore[list-item]
