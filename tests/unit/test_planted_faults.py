"""The mutation suite's planted faults: refused outside the suite, and wrong the way the table says."""

from __future__ import annotations

from pathlib import Path

import pytest

from mirrordrill.replicator import __main__ as replicator_main
from mirrordrill.replicator.planted_faults import FAULT_ENV, SUITE_ENV, CheckpointFault, DataPathFault, PlantedFaultRefused
from tests.unit.replicator_config_helpers import HEAD


def test_no_fault_unless_asked() -> None:
    assert CheckpointFault.from_env({}) is None
    assert CheckpointFault.from_env({SUITE_ENV: "1"}) is None
    assert DataPathFault.from_env({}) is None


def test_a_fault_outside_the_suite_is_refused_naming_the_variable_to_unset() -> None:
    with pytest.raises(PlantedFaultRefused, match=f"only for the mutation suite.*unset {FAULT_ENV}"):
        CheckpointFault.from_env({FAULT_ENV: "checkpoint-offset+100"})


def test_an_unknown_fault_lists_the_known_ones() -> None:
    known = ("checkpoint-offset\\+100, checkpoint-offset-100, checkpoint-frozen, drop-1-in-1000, duplicate-1-in-1000, "
             "resume-offset-100")
    with pytest.raises(PlantedFaultRefused, match=known):
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


def test_each_kind_of_fault_plants_only_its_own_part() -> None:
    data_path = {FAULT_ENV: "drop-1-in-1000", SUITE_ENV: "1"}
    assert CheckpointFault.from_env(data_path) is None
    assert DataPathFault.from_env(data_path) == DataPathFault(drop_every=1000)
    assert DataPathFault.from_env({FAULT_ENV: "duplicate-1-in-1000", SUITE_ENV: "1"}).changes_records
    assert DataPathFault.from_env({FAULT_ENV: "checkpoint-frozen", SUITE_ENV: "1"}) is None


@pytest.mark.parametrize("copied, resumed", [(500, 400), (60, -1), (-1, -1)])
def test_a_planted_resume_restarts_100_records_early(copied: int, resumed: int) -> None:
    fault = DataPathFault.from_env({FAULT_ENV: "resume-offset-100", SUITE_ENV: "1"})
    assert fault is not None and not fault.changes_records and fault.resume_from(copied) == resumed


def test_a_data_path_fault_outside_the_suite_is_refused() -> None:
    with pytest.raises(PlantedFaultRefused, match="only for the mutation suite"):
        DataPathFault.from_env({FAULT_ENV: "drop-1-in-1000"})


def test_the_replicator_exits_2_on_a_fault_outside_the_suite(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv(FAULT_ENV, "checkpoint-frozen")
    monkeypatch.delenv(SUITE_ENV, raising=False)
    config = tmp_path / "mm2.properties"
    config.write_text(HEAD + "A->B.enabled = true\n")
    assert replicator_main.main(["--config", str(config), "--workdir", str(tmp_path / "w")]) == 2
    assert "only for the mutation suite" in capsys.readouterr().err
