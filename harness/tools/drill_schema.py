"""``mirrordrill schema``: the drill file's JSON Schema, generated from the drill file's models.

Editors check a drill as it is typed against it (the YAML extension reads the
``# yaml-language-server: $schema=`` line every shipped drill starts with). It says what the
models say about shape: fields, types, allowed values, required keys. What needs the whole file
(an unknown cluster, a topic a step names) stays ``validate``'s: the schema cannot see it.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from mirrordrill.harness.drill.schema import Scenario

SCHEMA_FILE = Path("docs") / "drill.schema.json"  # the committed copy, relative to a checkout's root
SCHEMA_ID = "https://mirrordrill.invalid/drill.schema.json"  # names it; nothing fetches it
YAML_LANGUAGE_SERVER_LINE = "# yaml-language-server: $schema=../docs/drill.schema.json"


def drill_json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a drill file."""
    body = Scenario.model_json_schema()
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SCHEMA_ID,
            **body, "title": "mirrordrill drill file"}


def schema_text() -> str:
    """The schema as the committed file holds it: sorted keys, two-space indent, a final newline."""
    return json.dumps(drill_json_schema(), indent=2, sort_keys=True) + "\n"


def cmd_schema(args: argparse.Namespace) -> int:
    text = schema_text()
    if args.out:
        Path(args.out).write_text(text)
    else:
        print(text, end="")
    return 0


def add_parsers(sub: argparse._SubParsersAction) -> None:  # argparse exposes no public type for it
    s = sub.add_parser("schema", help="print the drill file's JSON Schema (for editors and CI lint jobs)")
    s.add_argument("--out", metavar="PATH", help=f"write it to PATH instead (the checkout keeps it at {SCHEMA_FILE})")
    s.set_defaults(func=cmd_schema)
