"""The manual's generated reference pages: committed as the code gives them, and listing every field
of the drill file, every ``do:`` kind, every metric, every replicator setting and every CLI flag, so
nothing a user can write goes undocumented (a new one appears on its page, or this fails)."""

from __future__ import annotations

import argparse
import re
import shutil
from pathlib import Path

import pytest

from mirrordrill.harness.cli.commands import build_parser
from mirrordrill.harness.drill.actions.registry import ACTIONS
from mirrordrill.harness.drill.metrics import metric_names
from mirrordrill.harness.tools.docs_reference import (
    CLI_PAGE,
    DRILL_FIELDS_PAGE,
    GUIDE,
    REFRESH_COMMAND,
    REPLICATOR_SETTINGS_PAGE,
    cli_page,
    drill_fields_page,
    reference_pages,
    replicator_settings_page,
)
from mirrordrill.harness.tools.drill_schema import drill_json_schema
from mirrordrill.harness.tools.measurement_tables import TABLES
from mirrordrill.primitives.measurement_record import RECORDS_DIR
from mirrordrill.replicator.config.flow import FlowConfig
from mirrordrill.replicator.config.settings import ClusterConfig, ReplicatorConfig
from tests.unit.test_action_facts import FloodAction, flood  # noqa: F401 (flood is a fixture used below)

REPO = Path(__file__).resolve().parents[2]


def _sections(page: str) -> dict[str, str]:
    """A page's text by the anchor of each ``## heading {#anchor}``."""
    parts = re.split(r"^## .*\{#([\w-]+)\}$", page, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


@pytest.mark.parametrize("path", [DRILL_FIELDS_PAGE, REPLICATOR_SETTINGS_PAGE, CLI_PAGE,
                                  *dict.fromkeys(t.page for t in TABLES)], ids=str)
def test_the_committed_page_is_the_one_the_code_gives(path):
    expected = reference_pages(REPO, build_parser())[path]
    committed = (REPO / path).read_text() if (REPO / path).is_file() else ""
    assert committed == expected, f"{path} is stale: run {REFRESH_COMMAND} (and commit what it writes)"


def test_every_field_of_the_drill_file_is_in_its_models_section():
    schema = drill_json_schema()
    sections = _sections(drill_fields_page((REPO / GUIDE).read_text()))
    models = {"the-file": schema, **{name.lower(): model for name, model in schema["$defs"].items()}}
    missing = [f"{anchor}.{field}" for anchor, model in models.items() for field in model.get("properties", {})
               if f"| `{field}` |" not in sections.get(anchor, "")]
    assert not missing, f"fields without a row on the page: {missing}"


def test_every_step_kind_and_metric_is_listed():
    sections = _sections(drill_fields_page((REPO / GUIDE).read_text()))
    assert [do for do in ACTIONS if f"| `{do}` |" not in sections["timeline-steps"]] == []
    assert [m for m in metric_names() if f"| `{m}` |" not in sections["metrics"]] == []


def test_a_registered_step_kind_appears_with_its_facts(flood):  # noqa: F811 (the fixture)
    sections = _sections(drill_fields_page((REPO / GUIDE).read_text()))
    row = next(line for line in sections["timeline-steps"].splitlines() if line.startswith("| `flood_disk` |"))
    assert row == "| `flood_disk` | [FloodStep](#floodstep) | yes | yes | yes | — | yes |"
    assert "| `fill_percent` | integer | `90` |" in sections["floodstep"]


def test_the_guide_sections_the_fields_page_links_to_exist():
    page = drill_fields_page((REPO / GUIDE).read_text())
    linked = set(re.findall(r"\(\.\./drill-files\.md#([\w-]+)\)", page))
    assert {"5-clusters", "11-timeline", "12-expectations"} <= linked


def test_every_setting_of_the_replicator_is_listed():
    sections = _sections(replicator_settings_page())
    for anchor, model in (("per-flow", FlowConfig), ("per-process", ReplicatorConfig), ("per-cluster", ClusterConfig)):
        listed = set(re.findall(r"^\| [^|]+ \| `(\w+)` \|", sections[anchor], re.M))
        expected = {name for name, field in model.model_fields.items() if not field.exclude} - {
            "source", "target", "clusters", "flows"}
        assert expected == listed, anchor
    assert "| `A->B.tasks.max` | `tasks_max` | integer (≥ 1) | `1` |" in sections["per-flow"]


def test_every_command_and_flag_of_the_cli_is_on_its_page():
    parser = build_parser()
    sections = _sections(cli_page(parser))
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    assert set(commands) == set(sections)
    missing = [f"{name} {option}" for name, sub in commands.items() for action in sub._actions
               for option in action.option_strings if option not in ("-h", "--help")
               and f"`{option}" not in sections[name]]
    assert not missing, f"flags missing from the page: {missing}"


def test_a_new_flag_appears_with_its_help_default_and_choices():
    parser = argparse.ArgumentParser(prog="mirrordrill")
    sub = parser.add_subparsers(dest="command")
    s = sub.add_parser("drill", help="run something")
    s.add_argument("file", help="a drill file")
    s.add_argument("--speed", choices=["slow", "fast"], default="slow", help="how fast (default %(default)s; 100%%)")
    s.add_argument("--tag", action="append", metavar="NAME", help="a label")
    section = _sections(cli_page(parser))["drill"]
    assert "| `FILE` | a drill file |  |  |" in section
    assert "| `--speed` | how fast (default slow; 100%) | `slow`, `fast` | `slow` |" in section
    assert "| `--tag NAME` | a label (repeatable) |  |  |" in section


def test_the_command_writes_the_pages_and_check_names_a_stale_one(tmp_path, capsys):
    from mirrordrill.harness.cli.commands import main
    (tmp_path / GUIDE).parent.mkdir(parents=True)
    (tmp_path / GUIDE).write_text((REPO / GUIDE).read_text())
    # the hand-written pages the measurement tables sit in, and the records they come from
    shutil.copytree(REPO / RECORDS_DIR, tmp_path / RECORDS_DIR)
    shutil.copy(REPO / "README.md", tmp_path / "README.md")
    (tmp_path / "docs" / "explanations").mkdir()
    shutil.copy(REPO / "docs" / "explanations" / "replicator.md", tmp_path / "docs" / "explanations" / "replicator.md")
    assert main(["docs", "--check", "--root", str(tmp_path)]) == 1  # nothing written yet: every page is stale
    assert f"{CLI_PAGE} is stale" in capsys.readouterr().err
    assert main(["docs", "--root", str(tmp_path)]) == 0
    assert (tmp_path / CLI_PAGE).read_text() == (REPO / CLI_PAGE).read_text()
    assert main(["docs", "--check", "--root", str(tmp_path)]) == 0
    bench = tmp_path / RECORDS_DIR / "bench.md"
    bench.write_text(bench.read_text().replace("| quickstart | pyspark | 3/3 |", "| quickstart | pyspark | 2/3 |"))
    assert main(["docs", "--check", "--root", str(tmp_path)]) == 1  # a table edited by hand
    assert f"{RECORDS_DIR / 'bench.md'} is stale" in capsys.readouterr().err
    assert main(["docs", "--check", "--root", str(REPO)]) == 0
