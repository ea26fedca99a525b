"""The drill file's JSON Schema: current in the checkout, met by every shipped and documented drill,
and refusing what the models refuse for its shape (the bad-file table's structural cases)."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import pytest
import yaml
from pydantic import ValidationError

from mirrordrill.harness.cli import commands as cli
from mirrordrill.harness.drill.schema import Scenario
from mirrordrill.harness.drill.yaml_source import YamlSyntaxError, load_yaml
from mirrordrill.harness.tools.drill_schema import SCHEMA_FILE, YAML_LANGUAGE_SERVER_LINE, drill_json_schema, schema_text
from tests.unit.test_bad_drill_files import CASES
from tests.unit.test_docs_examples import EXAMPLES

REPO = Path(__file__).resolve().parents[2]
DRILLS = sorted((REPO / "scenarios").glob("*.yaml"))
# Errors about a file's shape (a field, a type, an allowed value), which a JSON Schema can say too.
# The rest (value_error: a cross-check, a bound, a duration's unit order; finite_number: a YAML
# .inf, which a JSON number cannot be) is validate's alone.
STRUCTURAL = {"extra_forbidden", "missing", "literal_error", "union_tag_invalid", "union_tag_not_found",
              "dict_type", "list_type", "string_type", "int_type", "int_parsing", "float_type", "float_parsing",
              "bool_type", "bool_parsing"}


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft202012Validator:
    schema = drill_json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_the_committed_schema_is_the_one_the_models_give():
    assert (REPO / SCHEMA_FILE).read_text() == schema_text(), \
        f"{SCHEMA_FILE} is stale: run ./mirrordrill schema --out {SCHEMA_FILE}"


def test_the_command_prints_it(capsys):
    assert cli.main(["schema"]) == 0
    assert capsys.readouterr().out == schema_text()


@pytest.mark.parametrize("drill", DRILLS, ids=[d.stem for d in DRILLS])
def test_a_shipped_drill_names_the_schema_and_meets_it(drill, validator):
    text = drill.read_text()
    assert text.splitlines()[0] == YAML_LANGUAGE_SERVER_LINE
    assert (drill.parent / YAML_LANGUAGE_SERVER_LINE.split("$schema=")[1]).resolve() == REPO / SCHEMA_FILE
    errors = [f"{list(e.path)}: {e.message}" for e in validator.iter_errors(yaml.safe_load(text))]
    assert not errors, errors


@pytest.mark.parametrize("text", EXAMPLES, ids=[t.splitlines()[0].removeprefix("name: ") for t in EXAMPLES])
def test_a_documented_drill_meets_it(text, validator):
    errors = [f"{list(e.path)}: {e.message}" for e in validator.iter_errors(yaml.safe_load(text))]
    assert not errors, errors


def _structural_cases() -> list[tuple[str, dict]]:
    """The bad-file table's cases that the models refuse for their shape, as parsed YAML."""
    out = []
    for case in CASES:
        if isinstance(case.text, bytes):
            continue
        try:  # the reader validate uses: a YAML bomb stops at its caps, not in a recursion
            data, _ = load_yaml(case.text, case.id)
        except (YamlSyntaxError, ValueError):
            continue
        if not isinstance(data, dict):
            continue
        try:
            Scenario.model_validate(data)
        except ValidationError as e:
            if {err["type"] for err in e.errors()} & STRUCTURAL:
                out.append((case.id, data))
    return out


def test_a_file_of_the_wrong_shape_is_refused_by_the_schema_too(validator):
    cases = _structural_cases()
    assert len(cases) >= 8, [case_id for case_id, _ in cases]  # the table still has such cases
    accepted = [case_id for case_id, data in cases if validator.is_valid(data)]
    assert not accepted, f"the schema accepts these bad files the models refuse: {accepted}"
