"""``mirrordrill init [DIR]``: a team's repository gets a starter drill, the pytest settings that run
its drills as tests, and CI jobs for GitHub Actions and GitLab CI. Nothing existing is overwritten.
"""

from __future__ import annotations

import argparse
import configparser
import re
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

from mirrordrill.primitives.about import mirrordrill_version

STARTER = Path(__file__).resolve().parent / "starter"
PARTS = ("drill", "pytest", "github", "gitlab")


@dataclass(frozen=True)
class Planned:
    part: str
    path: Path  # relative to the repository
    text: str


def planned_files(name: str, parts: tuple[str, ...]) -> list[Planned]:
    """What ``init`` writes for ``parts``, from the starter templates."""
    def fill(template: str) -> str:
        return (STARTER / template).read_text().format(name=name, version=mirrordrill_version())
    from mirrordrill.harness.tools.drill_schema import schema_text
    files = {
        "drill": [Planned("drill", Path("drills") / f"{name}.yaml", fill("drill.yaml")),
                  Planned("drill", Path("drills") / "drill.schema.json", schema_text())],
        "pytest": [Planned("pytest", Path("pytest.ini"), (STARTER / "pytest.ini").read_text())],
        "github": [Planned("github", Path(".github") / "workflows" / "mirrordrill.yml", fill("github-actions.yml"))],
        "gitlab": [Planned("gitlab", Path(".gitlab-ci.yml"), fill("gitlab-ci.yml"))],
    }
    return [f for part in parts for f in files[part]]


def existing_pytest_config(repo: Path) -> Path | None:
    """A pytest configuration the repository already has (a new pytest.ini would silently win over it)."""
    if (repo / "pytest.ini").exists():
        return repo / "pytest.ini"
    pyproject = repo / "pyproject.toml"
    if pyproject.exists() and "pytest" in tomllib.loads(pyproject.read_text()).get("tool", {}):
        return pyproject
    for name, section in (("setup.cfg", "tool:pytest"), ("tox.ini", "pytest")):
        parser = configparser.ConfigParser()
        if (repo / name).exists() and parser.read(repo / name) and parser.has_section(section):
            return repo / name
    return None


def init(repo: Path, name: str, parts: tuple[str, ...]) -> list[Path]:
    """Writes the parts; ValueError (nothing written) when a file exists already."""
    if not re.fullmatch(r"[A-Za-z0-9._-]+", name):
        raise ValueError(f"--name {name!r}: a drill name is letters, digits, '.', '_' and '-'")
    planned = planned_files(name, parts)
    taken = [str(f.path) for f in planned if (repo / f.path).exists()]
    if "pytest" in parts and not taken and (config := existing_pytest_config(repo)) is not None:
        taken.append(f"{config.name} (a pytest configuration: add '--mirrordrill' to its addopts and 'drills' "
                     "to its testpaths instead)")
    if taken:
        others = [p for p in PARTS if p in parts]
        raise ValueError(f"nothing written: {', '.join(taken)} already exist; move them aside, or choose "
                         f"the other parts with --only (of {', '.join(others)})")
    for f in planned:
        (repo / f.path).parent.mkdir(parents=True, exist_ok=True)
        (repo / f.path).write_text(f.text)
    return [f.path for f in planned]


def cmd_init(args) -> int:
    repo = Path(args.dir)
    parts = tuple(args.only or PARTS)
    try:
        written = init(repo, args.name, parts)
    except ValueError as e:
        print(f"mirrordrill init: {e}", file=sys.stderr)
        return 2
    for path in written:
        print(f"wrote {repo / path}")
    if "drill" in parts:
        print(f"next: mirrordrill validate {repo / 'drills' / args.name}.yaml, then mirrordrill run it "
              f"(or 'pytest' in {repo} to run every drill under drills/ as a test)")
    return 0


def add_parsers(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("init", help="write a starter drill, pytest settings and CI jobs (GitHub Actions, GitLab CI) "
                       "into a repository; nothing existing is overwritten")
    s.add_argument("dir", nargs="?", default=".", help="the repository (default: the working directory)")
    s.add_argument("--name", default="first-drill", help="the starter drill's name (default: first-drill)")
    s.add_argument("--only", action="append", choices=PARTS,
                   help="only these parts (repeatable): drill (drills/NAME.yaml and the schema for editors), "
                        "pytest (pytest.ini), github (.github/workflows/mirrordrill.yml), gitlab (.gitlab-ci.yml)")
    s.set_defaults(func=cmd_init)
