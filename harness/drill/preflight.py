"""The checks a drill file's replication gets before anything starts, as the run would make them.

``validate`` and ``run`` both call :func:`replication_problems`: each flow's settings go
through the same MM2 properties parser the adapters use (``ReplicationSetup.flow_config``),
the ``command`` template through the command adapter's own placeholder check, and each flow's
literal topic names are looked up among the topics the drill can put on its source. Problems
that make the run fail are errors; settings that will simply have no effect with this
replicator are warnings (one drill file serves every replicator).
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from mirrordrill.harness.drill.loops import loop_problems
from mirrordrill.harness.drill.plain_errors import did_you_mean
from mirrordrill.harness.drill.plan import Routes
from mirrordrill.harness.drill.replicators import replicator_class
from mirrordrill.harness.drill.replicators.errors import SetupError
from mirrordrill.harness.drill.replicators.setup import FlowSpec, ReplicationSetup
from mirrordrill.harness.drill.schema import Scenario
from mirrordrill.harness.drill.topology import topology_of
from mirrordrill.harness.lab.brokers.cluster import ClusterSpec
from mirrordrill.harness.lab.environment import TopologySpec
from mirrordrill.primitives.config_errors import InvalidSetting
from mirrordrill.replicator.config.validation import check_separator

# (path inside the drill file, message)
Report = Callable[[tuple, str], None]


@dataclass(frozen=True)
class _Planned:
    """What ``ReplicationSetup`` reads of an environment before anything runs: its topology."""

    spec: TopologySpec
    workdir: Path = Path(tempfile.gettempdir()) / "mirrordrill-validate"  # never created


def replication_problems(s: Scenario, routes: Routes, replicator: str, error: Report, warn: Report,
                         drill_dir: Path | None = None) -> None:
    """Every problem of ``s.replication`` for ``replicator`` that needs no running cluster (a relative
    program path of the command replicator is looked up in ``drill_dir``); ``routes``: the plan's."""
    r = s.replication
    flows = ("replication", "flows")
    seen: dict[tuple[str, str], int] = {}
    for i, f in enumerate(r.flows):
        if (f.source, f.target) in seen:
            error(flows + (i,), f"flow {f.source}->{f.target} is listed twice (also flows[{seen[f.source, f.target]}]); "
                                "keep one, and merge their topics and settings")
        seen.setdefault((f.source, f.target), i)
    try:
        check_separator(r.separator, list(s.clusters))
    except InvalidSetting as err:
        error(("replication", "separator"), f"{err.message}; choose another separator or rename the cluster")
        return
    try:
        spec = topology_of(s)
    except ValueError as err:
        error(("clusters",), str(err))
        return
    plan = _Planned(spec)
    for i, flow in enumerate(r.flows):
        if flow.source not in s.clusters or flow.target not in s.clusters or flow.source == flow.target:
            continue  # reported by the cross checks
        try:
            spec_of = FlowSpec(flow.source, flow.target, topics=flow.topics,
                               **({"topics_exclude": flow.topics_exclude} if flow.topics_exclude is not None else {}),
                               placement=flow.placement, settings=flow.settings)
            setup = ReplicationSetup(env=plan, flows=[spec_of], policy=r.policy, separator=r.separator,
                                     workdir=plan.workdir)
            adapter = replicator_class(replicator)
            if "mode" in adapter.reads_fields and r.mode:
                setup.flow_config(spec_of, {"mirrordrill.mode": r.mode})
            # accepted, but ignored by the bundled replicator (MM2 itself uses them)
            for w in (setup.config_warnings() if adapter.warns_ignored_settings else ()):
                key = w.key.split(".", 1)[1] if w.key.startswith(f"{spec_of.name}.") else w.key
                warn(flows + (i,) + (("settings", key) if key in flow.settings else ()), f"setting {key!r}: {w.message}")
        except (SetupError, ValueError) as err:
            named = next((k for k in flow.settings if repr(k) in str(err)), None)
            field = flows + (i,) + (("settings", named) if named else ())
            error(field, str(err).removeprefix(f"flow {flow.source}->{flow.target}: "))
    _topic_problems(s, routes, error)
    _replicator_problems(s, replicator, error, warn, drill_dir)
    loop_problems(s, replicator, error, warn)


def _topic_problems(s: Scenario, routes: Routes, error: Report) -> None:
    """A flow's topic written as a plain name (no regex) must be a topic its source can have."""
    names: dict[str, set[str]] = {c: set(t) for c, t in routes.origin_topics.items()}
    for pair in routes.check_pairs:  # topics that reach a cluster along flows
        names[pair.target] |= set(pair.topic_map)
    for i, f in enumerate(s.replication.flows):
        if f.source not in names:
            continue
        there = sorted(names[f.source])
        for j, pattern in enumerate(f.topics):
            # Only a literal name can be judged: a regex may match topics made outside the drill.
            if re.escape(pattern).replace("\\.", ".").replace("\\-", "-") != pattern:
                continue
            if not any(re.fullmatch(pattern, t) for t in there):
                error(("replication", "flows", i, "topics", j),
                      f"cluster {f.source} has no topic {pattern!r}{did_you_mean(pattern, there)}, so this flow "
                      f"would replicate nothing from it; its topics: {', '.join(there) or 'none'}")


def _replicator_problems(s: Scenario, replicator: str, error: Report, warn: Report, drill_dir: Path | None) -> None:
    r = s.replication
    for field, problem in replicator_class(replicator).file_problems(s, drill_dir):
        error(field, problem)
    for field, ignored in replicator_class(replicator).file_warnings(s):
        warn(field, ignored)
    # Judged against the file's own replicator: a pyspark drill run with --replicator mirrormaker2
    # to compare the two keeps its mode for pyspark, which is not a mistake in the file.
    own, reads = r.replicator, replicator_class(r.replicator).reads_fields
    if r.mode is not None and "mode" not in reads:
        warn(("replication", "mode"), f"mode applies to the pyspark replicator only; {own} ignores it")
    elif r.command is not None and "command" not in reads:
        warn(("replication", "command"), f"command applies to the command replicator only; {own} ignores it")
    if r.standby and "standby" not in reads:
        warn(("replication", "standby"), f"standby applies to the pyspark replicator only; {own} ignores it")
    if r.shell and "shell" not in reads:
        warn(("replication", "shell"), f"shell applies to the command replicator only; {own} ignores it")
    if r.mirrormaker2.exactly_once and "mirrormaker2" not in reads:
        warn(("replication", "mirrormaker2", "exactly_once"),
             f"exactly_once applies to MirrorMaker 2 only (run --replicator mirrormaker2); {own} ignores it")
    for name in sorted({"nodes", "worker"} & r.mirrormaker2.model_fields_set):
        if "mirrormaker2" not in reads:
            warn(("replication", "mirrormaker2", name),
                 f"{name} applies to MirrorMaker 2 only (run --replicator mirrormaker2); {own} ignores it")
    for name in sorted(r.mirrormaker1.model_fields_set):
        if "mirrormaker1" not in reads:
            warn(("replication", "mirrormaker1", name),
                 f"{name} applies to MirrorMaker 1 only (run --replicator mirrormaker1); {own} ignores it")
    if r.mirrormaker2.exactly_once:
        for i, f in enumerate(r.flows):
            level = str(f.settings.get("consumer.isolation.level", "read_committed"))
            if level != "read_committed":
                error(("replication", "flows", i, "settings", "consumer.isolation.level"),
                      f"exactly_once needs MM2's source consumers at read_committed (it declares exactly-once "
                      f"support only then); remove consumer.isolation.level: {level}")


def flow_setting_problem(key: str, value: object) -> str | None:
    """Why ``key: value`` is not a valid flow setting (None when it is): the sweep's ``--param`` check."""
    plan = _Planned(TopologySpec(clusters=(ClusterSpec("a"), ClusterSpec("b"))))
    try:
        ReplicationSetup(env=plan, flows=[FlowSpec("a", "b", settings={key: value})], workdir=plan.workdir)
    except (SetupError, ValueError) as err:
        return str(err).removeprefix("flow a->b: ").replace("a->b.<setting>", "<setting>")
    return None
