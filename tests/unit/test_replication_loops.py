"""Cycles of flows that a replicator can break are valid: the loop check refuses only what loops forever."""

from __future__ import annotations

import pytest

from mirrordrill.harness.drill.validate import check_text
from tests.unit.test_bad_drill_files import _identity_cycle
from tests.unit.test_scenario_validation import BASE

BREAKABLE = [
    ("bundled replicator: the provenance header", _identity_cycle("pyspark"), None),
    ("MM2 with the default policy: the alias prefix", _identity_cycle("mirrormaker2").replace("  policy: identity\n", ""),
     None),
    ("MM2 identity on flows whose topics do not overlap",
     _identity_cycle("mirrormaker2").replace("    - {source: dr, target: primary}\n",
                                             "    - {source: dr, target: primary, topics: [payments]}\n")
     .replace("topics:\n  - {name: orders", "topics:\n  - {name: payments, cluster: dr}\n  - {name: orders"),
     None),
    ("MM2 identity with no flow back", BASE.replace("replication:\n", "replication:\n  replicator: mirrormaker2\n"
                                                                     "  policy: identity\n", 1), None),
]


@pytest.mark.parametrize("text,replicator", [b[1:] for b in BREAKABLE], ids=[b[0] for b in BREAKABLE])
def test_a_cycle_the_replicator_breaks_is_valid(text, replicator):
    assert not check_text(text, "d.yaml", replicator).warnings
