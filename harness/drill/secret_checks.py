"""No secret in a drill file: what validate refuses, per place, before anything starts.

The drill file is copied into the run folder as it was run: its hash is summary.json's
``drill_sha256`` and the rerun line runs that copy. Redacting the copy would break both, so a
secret is kept out of the file instead, and where it goes depends on the place:

- a cluster's ``broker_properties``, a flow's ``settings``, a producer's ``settings``: the
  harness supplies every credential these clients and brokers use from the cluster's
  ``security`` (or ``existing.security``), where a password is a reference resolved into a 0600
  file of the drill's secret folder. A secret-looking key here would bypass that (and land in
  server.properties, the load spec or the replicator's properties), so it is refused, whether
  written as a value or a reference, with the place it belongs;
- a runbook command's ``env``: the command is the team's own and may need a token; a value is
  refused in favour of ``${env:NAME}``/``${file:PATH:KEY}``, which the run resolves into the
  command's environment only (harness/drill/runbook.py).
"""

from __future__ import annotations

import shlex
from collections.abc import Callable

from mirrordrill.harness.drill.schema import Scenario
from mirrordrill.harness.drill.schema_timeline import Failover, RunbookCommandDef, RunbookStep
from mirrordrill.primitives.config_refs import check_ref_syntax
from mirrordrill.primitives.redaction import literal_secret_keys, literal_secret_options, secret_keys

Report = Callable[[tuple, str], None]

_BY_SECURITY = ("{key} names a secret, and {what} gets its credentials from the cluster's security: remove it and "
                "set {where} (protocol, sasl_mechanism, username, password: ${{env:NAME}})")


def _security_of(s: Scenario, *clusters: str) -> str:
    """Where each cluster's security is written: its own ``security``, or ``existing.security``."""
    places = [f"clusters.{c}.existing.security" if c in s.clusters and s.clusters[c].existing is not None
              else f"clusters.{c}.security" for c in dict.fromkeys(clusters)]
    return " and ".join(places)


def secret_problems(s: Scenario, bad: Report) -> None:
    """Every secret-looking setting the drill file holds where it may not; ``bad`` gets each at its place."""
    for name, c in s.clusters.items():
        for key in secret_keys(c.broker_properties):
            bad(("clusters", name, "broker_properties", key),
                _BY_SECURITY.format(key=key, what="a broker", where=_security_of(s, name)))
    for i, f in enumerate(s.replication.flows):
        for key in secret_keys(f.settings):
            bad(("replication", "flows", i, "settings", key),
                _BY_SECURITY.format(key=key, what="the replicator", where=_security_of(s, f.source, f.target)))
    for i, p in enumerate(s.load.producers):
        for key in secret_keys(p.settings):
            bad(("load", "producers", i, "settings", key),
                _BY_SECURITY.format(key=key, what="the load", where=_security_of(s, p.cluster)))
    if s.replication.command is not None:
        _command_line(s.replication.command, ("replication", "command"), bad)
    for i, step in enumerate(s.timeline):
        if isinstance(step, RunbookStep):
            _runbook_env(step, ("timeline", i), bad)
        elif isinstance(step, Failover):
            for j, command in enumerate(step.runbook):
                _runbook_env(command, ("timeline", i, "runbook", j), bad)


def _command_line(command: str | list[str], at: tuple, bad: Report) -> None:
    try:
        argv = shlex.split(command) if isinstance(command, str) else command
    except ValueError:  # unbalanced quotes: the command's own check says so
        return
    for option in literal_secret_options(argv):
        bad(at, f"{option} names a secret and the command line holds its value (the drill file and every process "
                "list show it): pass it as a variable, e.g. $TOKEN from the command's env: TOKEN: ${env:NAME}")


def _runbook_env(command: RunbookCommandDef, at: tuple, bad: Report) -> None:
    _command_line(command.command, at + ("command",), bad)
    for key in literal_secret_keys(command.env):
        bad(at + ("env", key), f"{key} names a secret, so the drill file must not hold its value (the run folder keeps "
                               "a copy of the file): write a reference, ${env:NAME} or ${file:PATH:KEY}, resolved when "
                               "the command runs")
    for key, value in command.env.items():
        for problem in check_ref_syntax(value):
            bad(at + ("env", key), problem)
