"""Every shell recipe of the README and the manual is run by a test, or named with the test that runs
the same thing (tests/doc_recipes.py); none is silently left out."""

from __future__ import annotations

import ast
from collections import Counter

import pytest

from tests.doc_recipes import CHEAPLY, COVERAGE, MAPPED, REPO, RUNS, Recipe, part_of, recipes

RECIPES = recipes()


def test_the_docs_have_their_recipes():
    assert len(RECIPES) >= 24  # README and manual: the quickstart, the tutorials, the docker pages, the sweeps


def test_every_recipe_has_one_id():
    missing = [r.where for r in RECIPES if r.id is None]
    assert not missing, f"a ```bash block without a '<!-- recipe: ID -->' line before its fence: {missing}"
    twice = [i for i, n in Counter(r.id for r in RECIPES).items() if n > 1]
    assert not twice, f"recipe ids used twice: {twice}"


def test_every_recipe_is_covered_and_every_entry_names_a_recipe():
    ids = {r.id for r in RECIPES}
    assert sorted(ids - set(COVERAGE)) == [], "recipes no test covers: add them to tests/doc_recipes.py COVERAGE"
    assert sorted(set(COVERAGE) - ids) == [], "COVERAGE names recipes the docs no longer show"


@pytest.mark.parametrize("rec", RECIPES, ids=[r.id or r.where for r in RECIPES])
def test_every_command_line_is_claimed_and_every_part_claims_one(rec):
    commands = rec.commands()
    assert commands, f"{rec.where}: a recipe without a command"
    for command in commands:
        assert any(command.startswith(p.starts) for p in COVERAGE[rec.id]), f"{rec.where}: nothing covers {command!r}"
    claimed = {id(part_of(rec.id, c)) for c in commands}
    idle = [p.starts or "(all)" for p in COVERAGE[rec.id] if id(p) not in claimed]
    assert not idle, f"{rec.id}: parts that claim no command line: {idle}"


def _functions(path) -> set[str]:
    return {n.name for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.FunctionDef)}


@pytest.mark.parametrize("recipe_id", sorted(COVERAGE))
def test_each_covering_test_exists_and_says_how(recipe_id):
    for part in COVERAGE[recipe_id]:
        file, _, function = part.test.partition("::")
        path = REPO / file
        assert path.is_file() and function in _functions(path), f"{recipe_id}: no test {part.test}"
        assert part.how in (RUNS, CHEAPLY, MAPPED)
        if part.how == RUNS:
            # the test runs the block from the page (script(ID, ...)), so an edit of the block changes the test
            assert f'"{recipe_id}"' in path.read_text(), f"{part.test} does not run recipe {recipe_id}"
        if part.how == CHEAPLY:
            assert part.change and part.why and f'"{recipe_id}"' in path.read_text()
        if part.how == MAPPED:
            assert part.why, f"{recipe_id}: a mapped part says what the test runs instead"


def test_a_recipe_splits_into_the_commands_bash_runs():
    block = ("./a --x \\\n  --y   # two lines, one command\n# a comment line\n\ncat > f <<'YAML'\nk: v\n"
             "# inside the document, not a comment\nYAML\n./b\n")
    assert Recipe("x", "page.md", 1, block).commands() == [
        "./a --x \\\n  --y   # two lines, one command",
        "cat > f <<'YAML'\nk: v\n# inside the document, not a comment\nYAML",
        "./b",
    ]
