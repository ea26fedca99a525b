"""The suite hands out the shipped drills longest first (tests/drills/conftest.py), and every one of them."""

from __future__ import annotations

from pathlib import Path

from tests.drills.conftest import REPO, longest_first


def test_every_shipped_drill_is_collected_longest_first_and_a_new_one_goes_first():
    shipped = sorted((REPO / "scenarios").glob("*.yaml"))
    new = Path("scenarios/brand-new-drill.yaml")  # no measured figure yet
    ordered = longest_first([*shipped, new])
    assert sorted(ordered) == sorted([*shipped, new])
    assert ordered[0] == new
    # the record's longest light drill goes before its shortest
    names = [f.stem for f in ordered]
    assert names.index("active-passive-failback") < names.index("wan-partition")
