"""The CLI's ``plan`` and ``cleanup`` commands, and ``run``'s allow-list of existing clusters."""

from __future__ import annotations

import sys
from pathlib import Path

from harness.kafka import owned_names as cleaning
from harness.kafka.existing_connect import ClusterUnreachable, admin_for
from harness.existing.plan import plan, render
from primitives.kafka.existing_cluster import ExistingClusterDef

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def refuse_existing(scenario, allowed: list[str] | None) -> str | None:
    """Why ``run`` must not start (None when it may): an existing cluster nobody allowed by name on
    the command line."""
    existing = sorted(scenario.existing_clusters())
    if not existing:
        return None
    missing = [c for c in existing if c not in (allowed or [])]
    if missing:
        flags = " ".join(f"--allow-cluster {c}" for c in missing)
        return (f"the drill would touch the existing cluster(s) {', '.join(missing)}; read 'mirrordrill plan FILE' "
                f"first, then allow each one by name on the command line: {flags}")
    return None


def cmd_plan(args) -> int:
    """Print what the drill would do to each existing cluster; with the checks, exit 1 if one failed."""
    from harness.scenario.validate import ScenarioInvalid, check_file
    try:
        scenario = check_file(Path(args.file), args.replicator).scenario
    except ScenarioInvalid as e:
        print(str(e), file=sys.stderr)
        return EXIT_USAGE
    if not scenario.existing_clusters():
        print(f"{args.file}: the drill declares no existing cluster; it starts its own clusters and touches nothing else")
        return EXIT_OK
    plans = plan(scenario, Path(args.file).resolve().parent, args.replicator, check=not args.offline)
    print(render(plans))
    failed = [p.footprint.cluster for p in plans if not p.passed]
    if failed:
        print(f"mirrordrill plan: checks failed on {', '.join(failed)} (see above)", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK


def _targets(args) -> dict[str, ExistingClusterDef]:
    if args.bootstrap:
        return {"bootstrap": ExistingClusterDef(bootstrap_servers=args.bootstrap)}
    from harness.scenario.validate import load_scenario
    existing = load_scenario(Path(args.file)).existing_clusters()
    unknown = [c for c in args.cluster or [] if c not in existing]
    if unknown:
        raise ValueError(f"--cluster {', '.join(unknown)}: not an existing cluster of {args.file} "
                         f"(its existing clusters: {', '.join(existing) or 'none'})")
    return {c: d for c, d in existing.items() if not args.cluster or c in args.cluster}


def cmd_cleanup(args) -> int:
    """Remove the topics and groups named with the prefix from each existing cluster (or --bootstrap)."""
    from harness.scenario.validate import ScenarioInvalid
    if bool(args.file) == bool(args.bootstrap):
        print("mirrordrill cleanup: give the drill file (its existing clusters and their security) or "
              "--bootstrap HOST:PORT (a PLAINTEXT cluster), not both", file=sys.stderr)
        return EXIT_USAGE
    try:
        cleaning.check_prefix(args.prefix)
        targets = _targets(args)
    except (cleaning.CleanupRefused, ValueError, ScenarioInvalid) as e:
        print(f"mirrordrill cleanup: {e}", file=sys.stderr)
        return EXIT_USAGE
    base = Path(args.file).resolve().parent if args.file else None
    failed = False
    for name, cluster in targets.items():
        try:
            admin = admin_for(cluster, base)
            found = cleaning.find(admin, name, args.prefix)
        except (ClusterUnreachable, Exception) as e:  # noqa: BLE001 - one cluster's failure is reported, the rest go on
            print(f"{name}: cannot reach or list {cluster.bootstrap_servers}: {e}", file=sys.stderr)
            failed = True
            continue
        verb = "would delete" if args.dry_run else "deleting"
        print(f"{name}: {verb} {len(found.topics)} topic(s) {found.topics} and {len(found.groups)} group(s) {found.groups}")
        for error in found.errors:
            print(f"{name}: {error} (run cleanup again: groups on that broker were not seen)", file=sys.stderr)
        failed |= bool(found.errors)
        if args.dry_run:
            continue
        done = cleaning.remove(admin, found)
        print(f"{name}: deleted {len(done.topics)} topic(s), {len(done.groups)} group(s)")
        for error in done.errors:
            print(f"{name}: {error}", file=sys.stderr)
        failed |= bool(done.errors)
    return EXIT_FAILED if failed else EXIT_OK


def add_parsers(sub) -> None:
    """The ``plan`` and ``cleanup`` sub-commands."""
    s = sub.add_parser("plan", help="print what a drill would create or change on existing clusters, and check it "
                                    "read-only against them")
    s.add_argument("file", help="a drill file with existing clusters")
    s.add_argument("--replicator", choices=["pyspark", "mirrormaker2", "command"],
                   help="plan for this replicator instead of the file's own")
    s.add_argument("--offline", action="store_true", help="print the plan without contacting the clusters")
    s.set_defaults(func=cmd_plan)
    s = sub.add_parser("cleanup", help="remove the topics and consumer groups an interrupted drill left")
    s.add_argument("file", nargs="?", help="the drill file (its existing clusters and how to reach them)")
    s.add_argument("--prefix", required=True, help="the drill's owned_prefix (what run and plan print)")
    s.add_argument("--cluster", action="append", metavar="NAME", help="only this existing cluster (repeatable)")
    s.add_argument("--bootstrap", metavar="HOST:PORT,...", help="a PLAINTEXT cluster instead of a drill file's")
    s.add_argument("--dry-run", action="store_true", help="list what would be deleted, delete nothing")
    s.set_defaults(func=cmd_cleanup)
