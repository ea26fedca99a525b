"""A team's own replicator (uReplicator, Brooklin, a Flink job, a script) as a command line.

The scenario gives a command template; the harness fills in each flow's placeholders, runs
one process per flow in that flow's working folder, stops it with SIGTERM (SIGKILL after
the grace period), kills, pauses or restarts it on the timeline, and checks what arrives on
the target like any other replicator's output. The template is split like a shell would
(``shlex``) but never run by a shell: a placeholder's value is always one argument, and shell
syntax (a pipe, a redirect, ``$VAR``, a glob) is refused rather than passed on as a literal
argument. A drill that wants a shell says so (``replication.shell: true``): the command then
runs through ``/bin/sh -c`` with every placeholder's value quoted.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import string
import subprocess
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mirrordrill.harness.drill.replicators.errors import ReplicatorError, ReplicatorNotReady, SetupError, UnsupportedOperation
from mirrordrill.harness.drill.replicators.interface import DEFAULT_STOP_GRACE_S, RunInputs
from mirrordrill.harness.drill.replicators.processes import ProcessReplicator, read_log_since
from mirrordrill.harness.drill.replicators.setup import FlowSpec, ReplicationSetup
from mirrordrill.primitives.process import ManagedProcess, program_path_problem
from mirrordrill.primitives.redaction import redact_argv

if TYPE_CHECKING:
    from mirrordrill.harness.drill.schema import Scenario
    from mirrordrill.harness.lab.spark.deployment import SparkDeployment

PLACEHOLDERS: Mapping[str, str] = {
    "source_bootstrap": "the source cluster's bootstrap servers, as seen from where the replicator runs",
    "target_bootstrap": "the target cluster's bootstrap servers, as seen from where the replicator runs",
    "topics_regex": "the flow's topics as one regex (it must match whole topic names)",
    "topics_exclude_regex": "topics to leave out, as one regex ('' when none)",
    "remote_prefix": "what the drill expects before each replicated topic's name (e.g. 'east.'; '' for identity)",
    "workdir": "the flow's own working folder (also the process's working directory)",
    "source": "the source cluster's alias",
    "target": "the target cluster's alias",
    "source_client_properties": "a 0600 file of Java client security settings for the source (security.protocol, "
                                "sasl.jaas.config, PEM ssl.*; '' for a plain cluster); outside the run folder",
    "target_client_properties": "the same for the target cluster",
    "source_librdkafka_properties": "the source's security settings for librdkafka clients (ssl.ca.location, "
                                    "sasl.username/password, …; '' for a plain cluster)",
    "target_librdkafka_properties": "the same for the target cluster",
}
"""Placeholders of the replicator command, one set of values per flow."""

TRANSLATE_PLACEHOLDERS: Mapping[str, str] = {**PLACEHOLDERS, "group": "the consumer group to translate"}
"""Placeholders of the offset translation command."""

TRANSLATE_OUTPUT = 'a JSON list of {"topic": <remote topic>, "partition": <int>, "offset": <int>} on stdout'


SHELL = ("/bin/sh", "-c")  # what runs a template when the drill asks for a shell

# Outside quotes, these make a shell do something a plain argv never does.
_OPERATORS = {"|": "a pipe", "&": "a background job or &&", ";": "a command separator",
              "<": "a redirect", ">": "a redirect", "(": "a subshell", ")": "a subshell",
              "`": "command substitution"}
_EXPANSION = re.compile(r"\$(\(|\{[^}]*\}?|\w+)")
_GLOBS = "*?["


class CommandTemplateError(SetupError):
    """A command template that cannot be filled in; names the placeholder and lists valid ones."""


def shell_syntax(command: str) -> str | None:
    """What in ``command`` only a shell would act on, described (None when there is nothing)."""
    quote, i = "", 0
    while i < len(command):
        ch, nxt = command[i], command[i + 1:i + 2]
        if ch == "\\" and quote != "'":
            i += 2  # an escaped character is literal, in or out of double quotes
            continue
        if quote == "'":
            quote = "" if ch == "'" else quote
        elif ch == "$" and (m := _EXPANSION.match(command, i)):
            return f"'{m.group(0)}' ({'command substitution' if nxt == '(' else 'a variable expansion'})"
        elif ch == "`":
            return f"'`' ({_OPERATORS[ch]})"
        elif quote == '"':
            quote = "" if ch == '"' else quote
        elif ch in "'\"":
            quote = ch
        elif ch in _OPERATORS:
            return f"'{ch}' ({_OPERATORS[ch]})"
        elif ch in _GLOBS:
            return f"'{ch}' (a glob)"
        elif ch == "~" and (i == 0 or command[i - 1].isspace()):
            return "'~' (home folder expansion)"
        i += 1
    return None


@dataclass(frozen=True)
class CommandTemplate:
    """A command line with ``{placeholder}`` fields, checked once and filled in per flow."""

    argv: tuple[str, ...]
    fields: frozenset[str]
    shell: bool = False  # argv is SHELL + one script; placeholders are filled in quoted

    @classmethod
    def parse(cls, command: str | Sequence[str], allowed: Mapping[str, str], what: str = "command",
              shell: bool = False) -> CommandTemplate:
        """Split (if a string) and check every ``{field}``; ``{{``/``}}`` are literal braces."""
        if shell and isinstance(command, str):
            argv = [*SHELL, command]
        elif isinstance(command, str):
            try:
                argv = shlex.split(command)
            except ValueError as err:
                raise CommandTemplateError(f"{what}: cannot split {command!r}: {err}") from None
        else:
            argv = [str(a) for a in command]
        if not argv:
            raise CommandTemplateError(f"{what} is empty")
        valid = ", ".join("{" + name + "}" for name in allowed)
        fields: set[str] = set()
        for arg in argv:
            try:
                parsed = list(string.Formatter().parse(arg))
            except ValueError as err:
                raise CommandTemplateError(f"{what}: argument {arg!r}: {err}; write {{{{ or }}}} for a literal "
                                           f"brace; valid placeholders: {valid}") from None
            for _, name, spec, conversion in parsed:
                if name is None:
                    continue
                if name == "" or name.isdigit():
                    raise CommandTemplateError(f"{what}: argument {arg!r} has a positional placeholder "
                                               f"'{{{name}}}'; name one of: {valid}")
                if name not in allowed:
                    base = re.split(r"[.\[]", name, maxsplit=1)[0]
                    hint = f" ({{{base}}} takes no attribute or index)" if base in allowed else ""
                    raise CommandTemplateError(f"{what}: unknown placeholder {{{name}}} in argument {arg!r}{hint}; "
                                               f"valid placeholders: {valid}")
                if spec or conversion:
                    raise CommandTemplateError(f"{what}: placeholder {{{name}}} in {arg!r} takes no format "
                                               f"spec or conversion; write plain {{{name}}}")
                fields.add(name)
        return cls(tuple(argv), frozenset(fields), shell and isinstance(command, str))

    def render(self, values: Mapping[str, str]) -> list[str]:
        """The argument list with every placeholder replaced by its value (quoted for a shell)."""
        if self.shell:
            return [*SHELL, self.argv[-1].format(**{k: shlex.quote(v) for k, v in values.items()})]
        return [arg.format(**values) for arg in self.argv]

    def program(self) -> str | None:
        """The program the template runs (None for a shell script: the shell finds it)."""
        return None if self.shell else self.argv[0]


def check_command(command: str | Sequence[str] | None, what: str = "command", shell: bool = False) -> str | None:
    """Why ``command`` cannot run as the command replicator's template (None when it can): what
    ``mirrordrill validate`` asks before anything starts."""
    if command is None:
        return (f"the command replicator needs a {what}: the command line that runs your replicator for one "
                f"flow, with placeholders {', '.join('{' + p + '}' for p in PLACEHOLDERS)}")
    try:
        CommandTemplate.parse(command, PLACEHOLDERS, what, shell)
    except CommandTemplateError as err:
        return str(err)
    found = shell_syntax(command) if isinstance(command, str) and not shell else None
    if found:
        return (f"{what}: {found} is shell syntax, but the command runs without a shell, so it would reach your "
                "program as a literal argument; quote it if it is meant literally, or set replication.shell: "
                "true to run the command through /bin/sh -c")
    return None


def program_problem(command: str, shell: bool, base_dir: Path | None) -> str | None:
    """Why the template's program cannot start (None when it can, or when a shell or a placeholder finds it)."""
    template = CommandTemplate.parse(command, PLACEHOLDERS, "command", shell)
    program = template.program()
    if program is None or "{" in program:
        return None
    return program_path_problem(program, base_dir, "give its path (absolute, or relative to the drill "
                                "file's folder), or install it")


def _from_folder(template: CommandTemplate, base_dir: Path | None) -> CommandTemplate:
    """``template`` with a relative program path made absolute: the process runs in its flow's folder."""
    program = template.program()
    if base_dir is None or program is None or "/" not in program or Path(program).is_absolute():
        return template
    return CommandTemplate((str(Path(base_dir) / program), *template.argv[1:]), template.fields)


def flow_folder(flow: FlowSpec) -> str:
    """The per-flow folder name (``east-to-west``)."""
    return f"{flow.source}-to-{flow.target}"


def _no_spark() -> SparkDeployment:
    raise RuntimeError("a command replicator runs no Spark")


class CommandReplicator(ProcessReplicator):
    """One user-supplied process per flow, started from a command template."""

    kind = "command"
    reads_fields = frozenset({"command", "shell"})

    @classmethod
    def options_for(cls, replication, run: RunInputs) -> dict:
        return {"command": replication.command, "shell": replication.shell, "base_dir": run.base_dir}

    @classmethod
    def version(cls) -> str:
        return "unknown (external command)"

    @classmethod
    def file_problems(cls, s: Scenario, base_dir: Path | None = None) -> Iterable[tuple[tuple, str]]:
        from mirrordrill.harness.drill.schema_timeline import Failover  # the drill file's model imports this package
        r = s.replication
        if cls.options_for(r, RunInputs(None, _no_spark, base_dir or Path.cwd())).get("command") is None:
            yield (("replication",), f"replicator {cls.kind!r} needs replication.command, the command line that runs "
                                     "your replicator for one flow (see docs/drill-files.md, 'The command replicator')")
        elif r.command and (problem := check_command(r.command, shell=r.shell)
                            or program_problem(r.command, r.shell, base_dir)):
            yield (("replication", "command"), problem)
        failing_over = {st.source for st in s.timeline if isinstance(st, Failover)}
        for i, c in enumerate(s.load.consumers):
            if c.failover_strategy in ("translated", "checkpoint") and c.cluster in failing_over:
                yield (("load", "consumers", i, "failover_strategy"),
                       f"the command replicator translates no offsets, so a '{c.failover_strategy}' failover "
                       "cannot run; choose timestamp, earliest or latest")

    @classmethod
    def file_warnings(cls, s: Scenario) -> Iterable[tuple[tuple, str]]:
        if any(f.settings for f in s.replication.flows):
            yield (("replication", "flows"), "flow settings are checked but never reach a command replicator; "
                                             "pass them in replication.command")

    def __init__(self, setup: ReplicationSetup, command: str | Sequence[str], *,
                 translate_command: str | Sequence[str] | None = None, ready_pattern: str | None = None,
                 env: Mapping[str, str] | None = None, settle_s: float = 1.0, translate_timeout_s: float = 60.0,
                 ready_timeout_s: float | None = None, shell: bool = False, base_dir: Path | None = None) -> None:
        """``ready_pattern``: a regex the process logs once it replicates (else: alive after ``settle_s``).

        ``translate_command`` prints offset translations (see ``TRANSLATE_OUTPUT``); without it
        ``translate_offsets`` raises ``UnsupportedOperation``. ``env`` adds environment variables.
        ``shell`` runs the command through /bin/sh -c; ``base_dir`` (the drill file's folder) is what
        a relative program path is read from, as validate checked it.
        """
        super().__init__(setup, ready_timeout_s)
        if command is None:  # a drill file without replication.command, run with --replicator command
            raise SetupError(check_command(None))
        self.template = _from_folder(CommandTemplate.parse(command, PLACEHOLDERS, "command", shell), base_dir)
        self.translate_template = (CommandTemplate.parse(translate_command, TRANSLATE_PLACEHOLDERS, "translate_command")
                                   if translate_command is not None else None)
        try:
            self.ready_pattern = re.compile(ready_pattern) if ready_pattern else None
        except re.error as err:
            raise SetupError(f"ready_pattern {ready_pattern!r} is not a valid regex: {err}") from None
        self.extra_env = {str(k): str(v) for k, v in (env or {}).items()}
        self.settle_s = settle_s
        self.translate_timeout_s = translate_timeout_s
        self.root = setup.folder / "command"
        self._procs: dict[str, ManagedProcess] = {}
        for flow in setup.flows:
            workdir = self.root / flow_folder(flow)
            self._procs[flow.name] = ManagedProcess(
                name=f"command {flow.name}", argv=list(self.template.argv), log_path=workdir / "replicator.log",
                cwd=workdir, stop_timeout_s=DEFAULT_STOP_GRACE_S)

    # --- placeholders -----------------------------------------------------------------
    def values(self, flow: FlowSpec) -> dict[str, str]:
        """Every placeholder's value for one flow (addresses need the running environment)."""
        return {
            "source_bootstrap": self.setup.bootstrap(flow.source, flow.location),
            "target_bootstrap": self.setup.bootstrap(flow.target, flow.location),
            "topics_regex": flow.topics_regex,
            "topics_exclude_regex": flow.topics_exclude_regex,
            "remote_prefix": self.setup.remote_prefix(flow.source),
            "workdir": str(self.root / flow_folder(flow)),
            "source": flow.source,
            "target": flow.target,
            **self._security_files("source", flow.source),
            **self._security_files("target", flow.target),
        }

    def _security_files(self, side: str, cluster: str) -> dict[str, str]:
        # Paths, never values: the argv is visible to every user of the machine (/proc/*/cmdline).
        try:
            c = self.setup.env.cluster(cluster)
        except KeyError:  # validation, before the environment runs: shapes only
            return {f"{side}_client_properties": "", f"{side}_librdkafka_properties": ""}
        return {f"{side}_client_properties": str(c.security_file("jvm") or ""),
                f"{side}_librdkafka_properties": str(c.security_file("librdkafka") or "")}

    def _environment(self, values: Mapping[str, str]) -> dict[str, str]:
        # The same values as MIRRORDRILL_* variables, for scripts that prefer them to arguments.
        return {**os.environ, **{f"MIRRORDRILL_{k.upper()}": v for k, v in values.items()}, **self.extra_env}

    def _prepare(self) -> None:
        for flow in self.setup.flows:
            proc = self._procs[flow.name]
            values = self.values(flow)
            proc.argv = self.template.render(values)
            proc.env = self._environment(values)

    # --- processes --------------------------------------------------------------------
    @property
    def processes(self) -> list[ManagedProcess]:
        return list(self._procs.values())

    def process_for(self, source: str, target: str) -> ManagedProcess:
        """The process of flow ``source->target``."""
        return self._procs[self.setup.flow(source, target).name]

    def _wait_ready(self, started_at: float, log_offsets: dict[str, int], deadline: float) -> None:
        if self.ready_pattern is None:
            # Nothing to watch for: catch the quick failures (bad path, bad arguments) at least.
            time.sleep(self.settle_s)
            self._raise_if_dead("starting")
            return
        waiting = set(self._procs)
        while time.monotonic() < deadline:
            self._raise_if_dead("starting")
            for name in list(waiting):
                proc = self._procs[name]
                if self.ready_pattern.search(read_log_since(proc.log_path, log_offsets[proc.name])):
                    waiting.discard(name)
            if not waiting:
                return
            time.sleep(0.5)
        tails = "\n".join(f"--- {self._procs[n].log_path} ---\n{self._procs[n].log_tail(20)}" for n in waiting)
        raise ReplicatorNotReady(f"no line matching {self.ready_pattern.pattern!r} from flow(s) {sorted(waiting)} "
                                 f"after {self.ready_timeout_s:.0f}s\n{tails}")

    # --- offsets ----------------------------------------------------------------------
    def translate_offsets(self, group: str, source: str, target: str, *,
                          source_lost: bool = False) -> dict[tuple[str, int], int]:
        """Run the translation command for this flow and group; parse its JSON answer (the command
        decides for itself where to look, whether or not the source is lost)."""
        if self.translate_template is None:
            raise UnsupportedOperation(
                "the command replicator cannot translate consumer offsets on its own: give the adapter "
                f"translate_command=<template> (placeholders {', '.join('{' + p + '}' for p in TRANSLATE_PLACEHOLDERS)}) "
                f"that prints {TRANSLATE_OUTPUT}")
        flow = self.setup.flow(source, target)
        values = {**self.values(flow), "group": group}
        argv = self.translate_template.render(values)
        workdir = Path(values["workdir"])
        workdir.mkdir(parents=True, exist_ok=True)
        proc = subprocess.Popen(argv, cwd=workdir, env=self._environment(values), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, start_new_session=True)
        try:
            out, err = proc.communicate(timeout=self.translate_timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise ReplicatorError(f"translate_command for {flow.name} did not finish in {self.translate_timeout_s:.0f}s: "
                                  f"{redact_argv(argv)}") from None
        if proc.returncode != 0:
            raise ReplicatorError(f"translate_command for {flow.name} exited with {proc.returncode}: "
                                  f"{redact_argv(argv)}\n{err[-2000:]}")
        return parse_translation(out, f"translate_command for {flow.name}")

    # --- description ------------------------------------------------------------------
    def describe(self) -> dict[str, Any]:
        flows = []
        for flow in self.setup.flows:
            proc = self._procs[flow.name]
            try:
                argv = self.template.render(self.values(flow))
            except Exception as err:  # addresses exist only once the environment runs
                argv = [f"<not rendered yet: {err}>"]
            flows.append({"flow": flow.name, "placement": flow.placement, "argv": redact_argv(argv),
                          "workdir": str(proc.cwd), "log_path": str(proc.log_path), "pid": proc.pid})
        return {
            "kind": self.kind, "policy": self.setup.policy, "separator": self.setup.separator,
            "command": redact_argv(list(self.template.argv)),
            "translate_command": redact_argv(list(self.translate_template.argv)) if self.translate_template else None,
            "ready_pattern": self.ready_pattern.pattern if self.ready_pattern else None,
            "processes": flows,
            "metrics_method": "end offsets on both clusters",
        }


def parse_translation(text: str, what: str) -> dict[tuple[str, int], int]:
    """Read a translation command's answer: ``[{"topic", "partition", "offset"}, …]``."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise ReplicatorError(f"{what}: output is not JSON ({err}); expected {TRANSLATE_OUTPUT}; got {text[:300]!r}") from None
    if not isinstance(data, list):
        raise ReplicatorError(f"{what}: expected {TRANSLATE_OUTPUT}; got a {type(data).__name__}")
    result: dict[tuple[str, int], int] = {}
    for item in data:
        ok = (isinstance(item, dict) and isinstance(item.get("topic"), str)
              and all(isinstance(item.get(k), int) and not isinstance(item.get(k), bool) for k in ("partition", "offset")))
        if not ok:
            raise ReplicatorError(f"{what}: bad entry {item!r}; expected {TRANSLATE_OUTPUT}")
        result[(item["topic"], item["partition"])] = item["offset"]
    return result
