"""``mirrordrill docs``: writes the manual's generated reference pages (harness/tools/docs_reference.py)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from mirrordrill.harness.cli.exit_codes import EXIT_FAILED, EXIT_OK, EXIT_USAGE


def cmd_docs(args: argparse.Namespace) -> int:
    from mirrordrill.harness.cli.commands import build_parser
    from mirrordrill.harness.tools.docs_reference import stale_pages, write_reference_pages
    root = Path(args.root)
    if not (root / "docs" / "measurements").is_dir():  # a team's repository, or a folder outside a checkout
        print(f"mirrordrill docs: {root.resolve()} is not a checkout of mirrordrill (no docs/measurements/); "
              "the manual's pages are written in mirrordrill's own source checkout", file=sys.stderr)
        return EXIT_USAGE
    if args.check:
        stale = stale_pages(root, build_parser())
        for path in stale:
            print(f"mirrordrill docs: {path} is stale; run ./mirrordrill docs to refresh it", file=sys.stderr)
        return EXIT_FAILED if stale else EXIT_OK
    for path in write_reference_pages(root, build_parser()):
        print(f"wrote {path}")
    return EXIT_OK


def add_parsers(sub: argparse._SubParsersAction) -> None:  # argparse exposes no public type for it
    s = sub.add_parser("docs", help="write the manual's reference pages generated from the code (drill-file fields, "
                                    "replicator settings, this command line) under docs/reference/, and the "
                                    "measurement tables from the records in docs/measurements/*.json")
    s.add_argument("--root", default=".", metavar="DIR", help="the checkout whose docs/ to write (default: .)")
    s.add_argument("--check", action="store_true", help="write nothing; exit 1 naming each page that is stale")
    s.set_defaults(func=cmd_docs)
