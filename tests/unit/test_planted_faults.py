"""The mutation suite's checkpoint faults: refused outside the suite, and wrong the way the table says."""

from __future__ import annotations

from pathlib import Path

import pytest

from replicator import __main__ as replicator_main
from replicator.planted_faults import FAULT_ENV, SUITE_ENV, CheckpointFault, PlantedFaultRefused
from tests.unit.replicator_config_helpers import HEAD


def test_no_fault_unless_asked() -> None:
    assert CheckpointFault.from_env({}) is None
    assert CheckpointFault.from_env({SUITE_ENV: "1"}) is None


def test_a_fault_outside_the_suite_is_refused_naming_the_variable_to_unset() -> None:
    with pytest.raises(PlantedFaultRefused, match=f"only for the mutation suite.*unset {FAULT_ENV}"):
        CheckpointFault.from_env({FAULT_ENV: "checkpoint-offset+100"})


def test_an_unknown_fault_lists_the_known_ones() -> None:
    with pytest.raises(PlantedFaultRefused, match="checkpoint-offset\\+100, checkpoint-offset-100, checkpoint-frozen"):
        CheckpointFault.from_env({FAULT_ENV: "drop", SUITE_ENV: "1"})


@pytest.mark.parametrize("name, translated, planted", [("checkpoint-offset+100", 500, 600),
                                                       ("checkpoint-offset-100", 500, 400),
                                                       ("checkpoint-offset-100", 40, 0)])
def test_shifted_translations(name: str, translated: int, planted: int) -> None:
    fault = CheckpointFault.from_env({FAULT_ENV: name, SUITE_ENV: "1"})
    assert fault is not None and not fault.frozen and fault.downstream(translated) == planted


def test_frozen_checkpoints() -> None:
    fault = CheckpointFault.from_env({FAULT_ENV: "checkpoint-frozen", SUITE_ENV: "1"})
    assert fault == CheckpointFault(frozen=True)


def test_the_replicator_exits_2_on_a_fault_outside_the_suite(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv(FAULT_ENV, "checkpoint-frozen")
    monkeypatch.delenv(SUITE_ENV, raising=False)
    config = tmp_path / "mm2.properties"
    config.write_text(HEAD + "A->B.enabled = true\n")
    assert replicator_main.main(["--config", str(config), "--workdir", str(tmp_path / "w")]) == 2
    assert "only for the mutation suite" in capsys.readouterr().err
