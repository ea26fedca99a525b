"""Check a drill file before anything starts; every problem names the file, line and field."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from mirrordrill.harness.drill.actions.base import TimelineFacts, unknown_cluster
from mirrordrill.harness.drill.actions.registry import action_for
from mirrordrill.harness.drill.bounds import cluster_partition_problems, record_size_problems
from mirrordrill.harness.drill.broker_settings import broker_property_problems
from mirrordrill.harness.drill.existing_checks import existing_cluster_problems, with_anchored_patterns
from mirrordrill.harness.drill.file_format import FORMAT, format_problem
from mirrordrill.harness.drill.invariants import bound_problems
from mirrordrill.harness.drill.payload_checks import payload_problems
from mirrordrill.harness.drill.plain_errors import did_you_mean, either, plain_message
from mirrordrill.harness.drill.plan import DrillPlan, Routes, plan_of, routes_of
from mirrordrill.harness.drill.preflight import replication_problems
from mirrordrill.harness.drill.profile import apply_profile, apply_spark_master
from mirrordrill.harness.drill.references import reference_problems
from mirrordrill.harness.drill.replicators import replicator_kinds
from mirrordrill.harness.drill.schema import Scenario, parse_expectation
from mirrordrill.harness.drill.schema_timeline import Failback, Failover
from mirrordrill.harness.drill.secret_checks import secret_problems
from mirrordrill.harness.drill.shipped import missing_drill_hint
from mirrordrill.harness.drill.step_targets import step_target_problems
from mirrordrill.harness.drill.topic_names import topic_name_problems
from mirrordrill.harness.drill.yaml_source import SourceMap, YamlSyntaxError, load_yaml, read_drill_text
from mirrordrill.harness.lab.environment import CLUSTER_NAME
from mirrordrill.primitives.config_refs import RefResolver

Report = Callable[[tuple, str], None]  # a problem at a path inside the drill file
Known = Callable[[tuple, str], bool]  # whether a cluster name at a path is one of the file's (reported if not)


@dataclass(frozen=True)
class Problem:
    file: str
    line: int | None
    field: str
    message: str
    warning: bool = False  # the file can run, but this part of it will not do what it says

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file  # a folder or a missing file has no line
        return f"{where}: {'warning: ' if self.warning else ''}{self.field}: {self.message}"


@dataclass(frozen=True)
class CheckedScenario:
    """A drill file that can run, its plan (what the run reads), and what in it will have no effect (printed, not fatal)."""

    scenario: Scenario
    plan: DrillPlan
    warnings: tuple[Problem, ...] = ()


class ScenarioInvalid(ValueError):
    """A drill file that cannot run; ``problems`` lists every reason found."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


def _data_path(data: Any, loc: tuple) -> tuple:
    """The part of a pydantic error location that exists in the data (drops union tags)."""
    out, node = [], data
    for part in loc:
        if isinstance(node, dict) and part in node:
            node = node[part]
            out.append(part)
        elif isinstance(node, dict) and part == "from" and "from" in node:
            node = node["from"]
            out.append(part)
        elif isinstance(node, list) and isinstance(part, int) and part < len(node):
            node = node[part]
            out.append(part)
        elif isinstance(node, dict) and isinstance(part, str):
            continue  # a union tag or a field the data lacks (reported at its parent)
        else:
            break
    return tuple(out)


def _field(path: tuple, loc: tuple) -> str:
    parts = [f"[{p}]" if isinstance(p, int) else f".{p}" for p in path]
    text = "".join(parts).lstrip(".")
    # A field the data lacks (a missing required one) is named after its parent; union tags
    # in the middle of ``loc`` are not fields and stay out.
    if loc and isinstance(loc[-1], str) and path[-1:] != (loc[-1],) and not (loc[-1] == "from" and "from" in path[-1:]):
        text = (text + "." if text else "") + loc[-1]
    return text or "(document)"


def load_scenario(path: Path, replicator: str | None = None, profile: str | None = None,
                  spark_master: str | None = None) -> Scenario:
    """Parse and validate one drill file; ScenarioInvalid lists every problem with its line."""
    return check_file(path, replicator, profile, spark_master=spark_master).scenario


def check_file(path: Path, replicator: str | None = None, profile: str | None = None, *,
               secrets: bool = True, spark_master: str | None = None) -> CheckedScenario:
    """Every check that needs no cluster, for ``replicator`` (default: the file's own) at ``profile``
    (default: full, the file as written; harness/drill/profile.py), with the limits for ``spark_master``
    (default: the file's; its ``spark_masters`` section). With ``secrets`` (what ``run``
    always does) every ``${env:}``/``${file:}``/``${dir:}`` reference is resolved too, its value unused."""
    path = Path(path)
    if not path.exists():
        raise ScenarioInvalid([Problem(str(path), None, "(file)", missing_drill_hint(str(path)))])
    try:
        text = read_drill_text(path)
    except YamlSyntaxError as e:
        raise ScenarioInvalid([Problem(str(path), None, "(file)", str(e).split(": YAML syntax error: ", 1)[-1])]) from None
    refs = RefResolver(base_dir=path.resolve().parent) if secrets else None
    return check_text(text, str(path), replicator, profile, refs=refs, spark_master=spark_master)


def parse_scenario(text: str, file: str, replicator: str | None = None, profile: str | None = None,
                   spark_master: str | None = None) -> Scenario:
    return check_text(text, file, replicator, profile, spark_master=spark_master).scenario


def check_text(text: str, file: str, replicator: str | None = None, profile: str | None = None, *,
               refs: RefResolver | None = None, spark_master: str | None = None) -> CheckedScenario:
    try:
        data, source = load_yaml(text, file)
    except YamlSyntaxError as e:
        raise ScenarioInvalid([Problem(file, e.line, "(syntax)", e.message)]) from None
    if not isinstance(data, dict):
        raise ScenarioInvalid([Problem(file, 1, "(document)", "a drill file is a mapping with name, clusters, "
                                                               "replication, load, timeline, expectations")])
    # Top-level "x-…" keys hold anchors for merge keys, as Compose files keep them: not drill fields.
    data = {k: v for k, v in data.items() if not (isinstance(k, str) and k.startswith("x-"))}
    if (unreadable := format_problem(data.get("format", FORMAT))) is not None:
        raise ScenarioInvalid([Problem(file, source.line_of(("format",)), "format", unreadable)])
    # the same keys and lines as the file: only values change (durations) or are replaced (limits)
    data = apply_spark_master(apply_profile(data, profile), spark_master, replicator)
    try:
        scenario = Scenario.model_validate(data)
    except ValidationError as e:
        problems: list[Problem] = []
        for err in e.errors():
            path = _data_path(data, err["loc"])
            # Only a missing field is named after the location's last part; elsewhere that may be a
            # union tag (a step's do: value), which is not a field of the file.
            where = _field(path, err["loc"] if err["type"] == "missing" else ())
            message = plain_message(err, Scenario)
            if problems and problems[-1].field == where and (merged := either(problems[-1].message, message)):
                problems[-1] = replace(problems[-1], message=merged)  # one field that takes two kinds of value
            else:
                problems.append(Problem(file, source.line_of(path), where, message))
        raise ScenarioInvalid(problems) from None
    problems = cross_check(scenario, data, source, refs)
    if problems:
        raise ScenarioInvalid(problems)
    # the replication checks assume the names and links are right, which the routes need too
    routes = routes_of(scenario)
    warnings = _replication_checks(scenario, routes, replicator or scenario.replication.replicator, source)
    _check_other_limits(scenario, text, file, replicator, profile, spark_master)
    # What every part reads: patterns on existing clusters as the prefix, then the rest (for the patterns
    # the checks accepted, the same names as written, so the checks above could read them as written).
    anchored = with_anchored_patterns(scenario)
    # the routes checked above are the run's unless anchoring changed the flows' patterns
    return CheckedScenario(anchored, plan_of(anchored, routes if anchored is scenario else None), tuple(warnings))


def _check_other_limits(scenario: Scenario, text: str, file: str, replicator: str | None, profile: str | None,
                        spark_master: str | None) -> None:
    """The short profile's own limits and each Spark master's are checked too, not first in CI."""
    if spark_master is not None:
        return  # checked once, from the run at the file's own master
    at_profile = f"at profile {profile}: " if profile not in (None, "full") else ""
    variants: list[tuple[str | None, str | None]] = [(name, None) for name in scenario.profiles
                                                     if profile in (None, "full")]
    variants += [(profile, master) for master in scenario.spark_masters]
    for name, master in variants:
        try:
            check_text(text, file, replicator, name, spark_master=master)
        except ScenarioInvalid as e:
            where = f"at profile {name}: " if master is None else f"{at_profile}on a {master} Spark master: "
            raise ScenarioInvalid([replace(p, message=where + p.message) for p in e.problems]) from None


def _replication_checks(s: Scenario, routes: Routes, kind: str, source: SourceMap) -> list[Problem]:
    """The replication's and the invariants' bounds' problems (raised), else the warnings for ``kind``."""
    problems: list[Problem] = []
    warnings: list[Problem] = []
    replication_problems(s, routes, kind,
                         lambda p, m: problems.append(Problem(source.file, source.line_of(p), _field(p, ()), m)),
                         lambda p, m: warnings.append(Problem(source.file, source.line_of(p), _field(p, ()), m, True)),
                         _drill_dir(source.file))
    if not problems:  # the built-in invariants' bounds that the timeline's faults demand
        bound_problems(s, routes.check_pairs, kind,
                       lambda p, m: problems.append(Problem(source.file, source.line_of(p), _field(p, ()), m)))
    if problems:
        raise ScenarioInvalid(problems)
    return warnings


def cross_check(s: Scenario, data: dict, src: SourceMap, refs: RefResolver | None = None) -> list[Problem]:
    """Checks that span sections: names that must exist, links that must be there, order of steps;
    with ``refs``, that every secret reference resolves."""
    out: list[Problem] = []

    def bad(path: tuple, message: str) -> None:
        out.append(Problem(src.file, src.line_of(path), _field(path, ()), message))

    for name in s.clusters:
        if not CLUSTER_NAME.match(name):
            bad(("clusters", name), f"cluster name {name!r} is invalid: a letter, then letters, digits, '_' or '-'")

    def known(path: tuple, name: str) -> bool:
        for problem in unknown_cluster(s, path, name):
            bad(problem.field, problem.message)
        return name in s.clusters

    links = _link_problems(s, bad, known)
    topics = _topic_problems(s, bad, known)
    flows = _flow_problems(s, links, bad, known)
    groups = _load_problems(s, topics, bad, known)
    if s.stable_address is not None:
        known(("stable_address", "points_to"), s.stable_address.points_to)
    existing_cluster_problems(s, bad)
    broker_property_problems(s, bad)
    topic_name_problems(s, bad)
    cluster_partition_problems(s, bad)
    record_size_problems(s, bad)
    payload_problems(s, bad, _drill_dir(src.file))
    secret_problems(s, bad)
    facts = TimelineFacts(scenario=s, links=frozenset(links), flows=frozenset(flows),
                          topics={c: frozenset(names) for c, names in topics.items()},
                          drill_dir=_drill_dir(src.file))
    _timeline_problems(s, facts, bad)
    step_target_problems(s, bad)
    if refs is not None:
        reference_problems(data, refs, bad)
    _expectation_problems(s, flows, groups, bad)
    return out


def _link_problems(s: Scenario, bad: Report, known: Known) -> set[frozenset[str]]:
    """The links' problems; returns the pairs of clusters joined (all of them when links are not listed)."""
    clusters = list(s.clusters)
    if s.links is None:
        return {frozenset((a, b)) for a in clusters for b in clusters if a != b}
    links: set[frozenset[str]] = set()
    for i, link in enumerate(s.links):
        for j, end in enumerate(link.between):
            known(("links", i, "between", j), end)
        if link.between[0] == link.between[1]:
            bad(("links", i, "between"), "a link joins two different clusters")
        if frozenset(link.between) in links:
            # Two entries would set two sets of conditions on one link: which one wins is unsaid.
            bad(("links", i), f"the link between {link.between[0]} and {link.between[1]} is listed twice; keep one "
                              "entry with its latency, jitter and bandwidth")
        links.add(frozenset(link.between))
    return links


def _topic_problems(s: Scenario, bad: Report, known: Known) -> dict[str, set[str]]:
    """The declared topics' problems; returns per cluster the topics declared there."""
    topics: dict[str, set[str]] = {c: set() for c in s.clusters}
    for i, t in enumerate(s.topics):
        if known(("topics", i, "cluster"), t.cluster):
            if t.name in topics[t.cluster]:
                bad(("topics", i, "name"), f"topic {t.name!r} is declared twice on {t.cluster}")
            topics[t.cluster].add(t.name)
            rf = t.replication_factor or 1
            # an existing cluster's broker count is known only there: plan checks it
            if rf > s.clusters[t.cluster].brokers and s.clusters[t.cluster].existing is None:
                bad(("topics", i, "replication_factor"),
                    f"replication factor {rf} exceeds the {s.clusters[t.cluster].brokers} broker(s) of {t.cluster}")
    return topics


def _flow_problems(s: Scenario, links: set[frozenset[str]], bad: Report, known: Known) -> set[str]:
    """The flows' ends and links; returns the flows as 'A->B'."""
    flows = set()
    for i, f in enumerate(s.replication.flows):
        ok = known(("replication", "flows", i, "source"), f.source) & known(("replication", "flows", i, "target"), f.target)
        if ok and f.source == f.target:
            bad(("replication", "flows", i), f"flow {f.source}->{f.target} replicates a cluster onto itself")
        elif ok and frozenset((f.source, f.target)) not in links:
            bad(("replication", "flows", i), f"no WAN link between {f.source} and {f.target}; add it under links")
        flows.add(f"{f.source}->{f.target}")
    return flows


def _load_problems(s: Scenario, topics: dict[str, set[str]], bad: Report, known: Known) -> set[str]:
    """Producers, backlog and consumers on declared clusters and topics; returns the consumer groups."""
    for i, p in enumerate(s.load.producers):
        if known(("load", "producers", i, "cluster"), p.cluster):
            for t in (p.topics if isinstance(p.topics, list) else list(p.topics)):
                if t not in topics[p.cluster]:
                    bad(("load", "producers", i, "topics"), f"topic {t!r} is not declared on {p.cluster} "
                                                            f"(declared: {sorted(topics[p.cluster])})")
    for i, b in enumerate(s.load.backlog):
        if known(("load", "backlog", i, "cluster"), b.cluster) and b.topic not in topics[b.cluster]:
            bad(("load", "backlog", i, "topic"), f"topic {b.topic!r} is not declared on {b.cluster} "
                                                 f"(declared: {sorted(topics[b.cluster])})")
    groups = set()
    for i, c in enumerate(s.load.consumers):
        if c.group in groups:
            bad(("load", "consumers", i, "group"), f"consumer group {c.group!r} is declared twice")
        groups.add(c.group)
        if known(("load", "consumers", i, "cluster"), c.cluster):
            for t in c.topics:
                if t not in topics[c.cluster]:
                    bad(("load", "consumers", i, "topics"), f"topic {t!r} is not declared on {c.cluster}")
    return groups


def _timeline_problems(s: Scenario, facts: TimelineFacts, bad: Report) -> None:
    """Steps in order within the load, ``when`` on a known flow, and each action's own checks."""
    last_at = 0.0
    for i, step in enumerate(s.timeline):
        at = ("timeline", i)
        if step.at is not None:
            if step.at < last_at:
                bad(at + ("at",), f"steps run in order: at {step.at:g}s comes after a step at {last_at:g}s")
            if step.at > s.duration:
                bad(at + ("at",), f"at {step.at:g}s is after the end of the load ({s.duration:g}s)")
            last_at = max(last_at, step.at)
        if step.when is not None and step.when.flow and step.when.flow not in facts.flows:
            bad(at + ("when", "flow"), f"unknown flow {step.when.flow!r}; flows are {sorted(facts.flows)}")
        for problem in action_for(step).validate(step, replace(facts, earlier=tuple(s.timeline[:i]))):
            bad(at + problem.field, problem.message)


def _expectation_problems(s: Scenario, flows: set[str], groups: set[str], bad: Report) -> None:
    """Each expectation parses and has something in the timeline to measure."""
    has_failover = any(isinstance(step, Failover) for step in s.timeline)
    has_failback = any(isinstance(step, Failback) for step in s.timeline)
    restores_history = any(isinstance(step, Failback) and step.restore_history for step in s.timeline)
    failed_over = {(step.source, step.target) for step in s.timeline  # (old primary, new primary)
                   if isinstance(step, Failover) and step.source in s.clusters and step.target in s.clusters}
    for key, value, path in _expectation_lines(s, bad):
        try:
            e = parse_expectation(key, value)
        except ValueError as err:
            bad(path, str(err))
            continue
        if e.family == "failback" and not has_failback:
            bad(path, f"{e.metric} needs a failback step in the timeline")
        elif e.metric == "failback.history_records" and not restores_history:
            bad(path, f"{e.metric} needs a failback step with restore_history: true (without it nothing is restored)")
        if e.family == "failover" and not has_failover:
            bad(path, f"{e.metric} needs a planned_failover or unplanned_failover step in the timeline")
        _scope_problems(s, e, path, (flows, groups, failed_over, has_failover), bad)


def _scope_problems(s: Scenario, e, path: tuple, names: tuple, bad: Report) -> None:
    """An expectation's scope names a flow (or chain), a failed-over group, or a failback."""
    flows, groups, failed_over, has_failover = names
    if e.scope and e.family == "failover" and e.scope not in groups:
        bad(path, f"unknown consumer group {e.scope!r}; groups are {sorted(groups)}")
    elif e.scope and e.family == "failover" and has_failover:
        cluster = next(c.cluster for c in s.load.consumers if c.group == e.scope)
        if cluster not in {a for a, _ in failed_over}:
            bad(path, f"consumer group {e.scope!r} runs on {cluster}, which no failover step leaves, so "
                      "there is nothing to measure; scope it to a group on a failed-over cluster")
    if e.scope and e.family == "failback" and e.scope not in {f"{a}->{b}" for b, a in failed_over}:
        bad(path, f"unknown failback {e.scope!r}; write it as new primary->old primary")
    if e.scope and e.family == "flow" and e.scope not in _reachable(flows):
        bad(path, f"unknown flow {e.scope!r}; flows (and chains of them) are {sorted(_reachable(flows))}")


def _drill_dir(file: str) -> Path | None:
    """The folder relative paths in the drill file are read from (None for text with no file)."""
    path = Path(file)
    return path.resolve().parent if path.is_file() else None


def _expectation_lines(s: Scenario, bad) -> list[tuple[str, Any, tuple]]:
    """Every ``metric: limit`` line with its path: the common ones and each replicator's own section."""
    out: list[tuple[str, Any, tuple]] = []
    for key, value in s.expectations.items():
        if key in replicator_kinds():
            if not isinstance(value, dict) or not value:
                bad(("expectations", key), f"'{key}' holds the limits that apply to the {key} replicator only: a "
                                           f"mapping of metric: limit, like '{key}: {{duplicates: 0}}'")
                continue
            out += [(k, v, ("expectations", key, k)) for k, v in value.items()]
        elif isinstance(value, dict):
            kinds = replicator_kinds()
            bad(("expectations", key), f"{key!r} is not a replicator{did_you_mean(key, list(kinds))}; a nested "
                                       f"mapping under expectations holds one replicator's own limits, and the "
                                       f"replicators are {', '.join(kinds)}")
        else:
            out.append((key, value, ("expectations", key)))
    return out


def _reachable(flows: set[str]) -> set[str]:
    """Every 'A->C' that flows connect, directly or along a forwarding chain A->B->C."""
    edges: dict[str, set[str]] = {}
    for f in flows:
        a, b = f.split("->")
        edges.setdefault(a, set()).add(b)
    out = set()
    for origin in edges:
        seen, todo = {origin}, [origin]
        while todo:
            for nxt in edges.get(todo.pop(), ()):
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
                    out.add(f"{origin}->{nxt}")
    return out
