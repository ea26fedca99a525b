"""The CLI's ``plan`` and ``cleanup`` commands, and ``run``'s allow-list of existing clusters."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from mirrordrill.harness.drill.replicators import replicator_kinds
from mirrordrill.harness.drill.shipped import drill_argument
from mirrordrill.harness.lab.brokers import owned_names as cleaning
from mirrordrill.harness.lab.brokers.existing_connect import admin_for
from mirrordrill.harness.tools.existing.plan import as_json, plan, render
from mirrordrill.primitives.kafka.existing_cluster import ExistingClusterDef

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
    from mirrordrill.harness.drill.validate import ScenarioInvalid, check_file
    try:
        scenario = check_file(Path(args.file), args.replicator).scenario
    except ScenarioInvalid as e:
        print(str(e), file=sys.stderr)
        return EXIT_USAGE
    plans = plan(scenario, Path(args.file).resolve().parent, args.replicator, check=not args.offline)
    failed = [p.footprint.cluster for p in plans if not p.passed]
    if args.json:
        print(json.dumps({"file": args.file, "scenario": scenario.name, "ok": not failed, "clusters": as_json(plans)},
                         indent=2))
    elif not plans:
        print(f"{args.file}: the drill declares no existing cluster; it starts its own clusters and touches nothing else")
    else:
        print(render(plans))
    if failed:
        print(f"mirrordrill plan: checks failed on {', '.join(failed)}{'' if args.json else ' (see above)'}",
              file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK


class _Refused(ValueError):
    """A cleanup that must not go on; the message says why and what to give instead."""


def _scope(args) -> tuple[str, dict[str, ExistingClusterDef], Path | None]:
    """The prefix, the clusters (by name) and the folder references are read from: the drill's declared
    prefix on its existing clusters, or an explicit prefix on clusters named one by one."""
    if bool(args.file) == bool(args.bootstrap):
        raise _Refused("give the drill file (its owned_prefix, existing clusters and their security) or "
                       "--bootstrap HOST:PORT --prefix P --cluster NAME (a PLAINTEXT cluster), not both")
    if args.bootstrap:
        if not args.prefix or len(args.cluster or []) != 1:
            raise _Refused("with --bootstrap, name what is cleaned: --prefix P and one --cluster NAME (the name "
                           "it is listed under)")
        cleaning.check_prefix(args.prefix)
        return args.prefix, {args.cluster[0]: ExistingClusterDef(bootstrap_servers=args.bootstrap)}, None
    from mirrordrill.harness.drill.validate import load_scenario
    s = load_scenario(Path(args.file))
    existing = s.existing_clusters()
    if not existing:
        raise _Refused(f"{args.file} declares no existing cluster: a drill that starts its own clusters leaves "
                       "nothing on anyone's")
    prefix = args.prefix or s.owned_prefix or ""
    if prefix != s.owned_prefix and not args.cluster:
        raise _Refused(f"--prefix {prefix!r} is not the drill's owned_prefix ({s.owned_prefix!r}): name each "
                       "cluster to clean with --cluster NAME, or leave --prefix out to clean the drill's own")
    cleaning.check_prefix(prefix)
    unknown = [c for c in args.cluster or [] if c not in existing]
    if unknown:
        raise _Refused(f"--cluster {', '.join(unknown)}: not an existing cluster of {args.file} "
                       f"(its existing clusters: {', '.join(existing)})")
    targets = {c: d for c, d in existing.items() if not args.cluster or c in args.cluster}
    return prefix, targets, Path(args.file).resolve().parent


def _confirmed(args, topics: int, groups: int) -> int | None:
    """None to go on deleting, else the exit code: --yes, or a 'y' typed on a terminal."""
    if args.yes:
        return None
    if not sys.stdin.isatty():
        print("mirrordrill cleanup: nothing deleted: without a terminal to ask on, deleting needs --yes (after "
              "reading the list above)", file=sys.stderr)
        return EXIT_USAGE
    try:
        answer = input(f"delete these {topics} topic(s) and {groups} group(s)? [y/N] ").strip().lower()
    except (EOFError, KeyboardInterrupt):  # Ctrl-D or Ctrl-C at the question: a no
        answer = ""
        print()
    if answer in ("y", "yes"):
        return None
    print("nothing deleted")
    return EXIT_FAILED


def cmd_cleanup(args) -> int:
    """List the topics and groups under the prefix on each cluster, then (confirmed) delete them."""
    from mirrordrill.harness.drill.validate import ScenarioInvalid
    try:
        prefix, targets, base = _scope(args)
    except (cleaning.CleanupRefused, _Refused, ScenarioInvalid) as e:
        print(f"mirrordrill cleanup: {e}", file=sys.stderr)
        return EXIT_USAGE
    failed, found = False, []
    for name, cluster in targets.items():
        try:
            admin = admin_for(cluster, base)
            listed = cleaning.find(admin, name, prefix)
        except Exception as e:  # noqa: BLE001 - one cluster's failure is reported, the rest go on
            print(f"{name}: cannot reach or list {cluster.bootstrap_servers}: {e}", file=sys.stderr)
            failed = True
            continue
        print(f"{name} ({cluster.bootstrap_servers}): {'would delete' if args.dry_run else 'to delete'} "
              f"{len(listed.topics)} topic(s) {listed.topics} and {len(listed.groups)} group(s) {listed.groups}")
        for error in listed.errors:
            print(f"{name}: {error} (run cleanup again: groups on that broker were not seen)", file=sys.stderr)
        failed |= bool(listed.errors)
        found.append((admin, listed))
    topics, groups = sum(len(f.topics) for _, f in found), sum(len(f.groups) for _, f in found)
    if args.dry_run or not topics + groups:
        return EXIT_FAILED if failed else EXIT_OK
    if (refused := _confirmed(args, topics, groups)) is not None:
        return refused
    for admin, listed in found:
        done = cleaning.remove(admin, listed)
        print(f"{listed.cluster}: deleted {len(done.topics)} topic(s), {len(done.groups)} group(s)")
        for error in done.errors:
            print(f"{listed.cluster}: {error}", file=sys.stderr)
        failed |= bool(done.errors)
    return EXIT_FAILED if failed else EXIT_OK


def add_parsers(sub) -> None:
    """The ``plan`` and ``cleanup`` sub-commands."""
    s = sub.add_parser("plan", help="print what a drill would create or change on existing clusters, and check it "
                                    "read-only against them")
    s.add_argument("file", type=drill_argument, help="a drill file with existing clusters")
    s.add_argument("--replicator", choices=replicator_kinds(),
                   help="plan for this replicator instead of the file's own")
    s.add_argument("--json", action="store_true", help="the plan as JSON on stdout (per existing cluster: topics, "
                   "groups, permissions, forced settings, checks, ok); the exit code is the same")
    s.add_argument("--offline", action="store_true", help="print the plan without contacting the clusters")
    s.set_defaults(func=cmd_plan)
    s = sub.add_parser("cleanup", help="list, then delete (asked, or --yes) the topics and consumer groups under a "
                                       "drill's prefix on its existing clusters",
                       description="Lists the topics and groups named with the prefix (and MirrorMaker 2's internal "
                                   "topics of aliases under it) on each cluster, then deletes them once confirmed: "
                                   "y on a terminal, or --yes. Without a terminal and without --yes it deletes "
                                   "nothing (exit 2). The prefix is the drill's owned_prefix; another one needs the "
                                   "clusters named with --cluster.")
    s.add_argument("file", nargs="?", type=drill_argument,
                   help="the drill file: its owned_prefix, its existing clusters and how to reach them")
    s.add_argument("--prefix", help="a prefix other than the drill's owned_prefix (then --cluster is required); "
                                    "required with --bootstrap")
    s.add_argument("--cluster", action="append", metavar="NAME", help="only this existing cluster (repeatable); with "
                                                                      "--bootstrap, the name it is listed under")
    s.add_argument("--bootstrap", metavar="HOST:PORT,...", help="a PLAINTEXT cluster instead of a drill file's")
    s.add_argument("--dry-run", action="store_true", help="list what would be deleted, delete nothing")
    s.add_argument("--yes", action="store_true", help="delete what is listed without asking")
    s.set_defaults(func=cmd_cleanup)
