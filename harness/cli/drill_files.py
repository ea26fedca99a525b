"""``mirrordrill validate`` and ``mirrordrill drills``: drill files checked, and the shipped ones listed."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path

from mirrordrill.harness.cli.exit_codes import EXIT_OK, EXIT_USAGE
from mirrordrill.harness.drill.replicators import replicator_kinds
from mirrordrill.harness.drill.shipped import drill_argument, shipped_drills


def cmd_validate(args) -> int:
    """Check drill files before anything starts (exit 2 when one cannot run, as ``run`` would)."""
    from mirrordrill.harness.drill.validate import ScenarioInvalid, check_file
    verdicts = []
    for path in args.files:
        try:
            checked = check_file(Path(path), args.replicator, args.profile, secrets=not args.no_secrets)
        except ScenarioInvalid as e:
            verdicts.append({"file": path, "ok": False, "problems": [asdict(p) for p in e.problems], "warnings": []})
            if not args.json:
                print(str(e), file=sys.stderr)
            continue
        s = checked.scenario
        counts = {"clusters": len(s.clusters), "flows": len(s.replication.flows), "steps": len(s.timeline),
                  "expectations": len(s.expectations)}
        verdicts.append({"file": path, "ok": True, "scenario": s.name, **counts, "problems": [],
                         "warnings": [asdict(w) for w in checked.warnings]})
        if not args.json:
            for warning in checked.warnings:
                print(str(warning), file=sys.stderr)
            print(f"{path}: ok ({s.name}: {counts['clusters']} clusters, {counts['flows']} flows, "
                  f"{counts['steps']} steps, {counts['expectations']} expectations"
                  f"{f', {len(checked.warnings)} warning(s)' if checked.warnings else ''})")
    ok = all(v["ok"] for v in verdicts)
    if args.json:
        print(json.dumps({"ok": ok, "files": verdicts}, indent=2))
    return EXIT_OK if ok else EXIT_USAGE


def cmd_drills(args) -> int:
    """One line per shipped drill: its name, its replicator, what it does."""
    drills = shipped_drills()
    width = max(len(d.name) for d in drills)
    for d in drills:
        print(f"{d.name:<{width}}  {d.summary}")
    print(f"\nrun one: mirrordrill run NAME (a file of that name in the working directory wins); "
          f"the files: {drills[0].path.parent}")
    return EXIT_OK


def add_parsers(sub: argparse._SubParsersAction, profile_option) -> None:
    s = sub.add_parser("validate", help="check drill files without running anything")
    s.add_argument("files", nargs="+", type=drill_argument, metavar="FILE",
                   help="drill files, or names of shipped drills ('mirrordrill drills')")
    s.add_argument("--replicator", choices=replicator_kinds(),
                   help="check for this replicator, as 'run --replicator' would (default: each file's own)")
    s.add_argument("--no-secrets", action="store_true",
                   help="do not resolve ${env:}/${file:}/${dir:} references (a CI lint job holding no secrets); "
                        "run always resolves them")
    s.add_argument("--json", action="store_true", help="the verdict as JSON on stdout: per file, ok, counts, "
                   "problems and warnings (file, line, field, message); the exit code is the same")
    profile_option(s)
    s.set_defaults(func=cmd_validate)

    s = sub.add_parser("drills", help="list the drills mirrordrill ships, one line each (run one by its name)")
    s.set_defaults(func=cmd_drills)
