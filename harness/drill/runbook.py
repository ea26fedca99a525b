"""Runbook commands: the team's own steps (a DNS switch, a config push, a check), run as part of a drill.

A command gets the drill's context in ``MIRRORDRILL_*`` environment variables, writes its output
to the run folder, and fails its step on a non-zero exit or a timeout. Inside a failover it runs
after the primary is lost and before the applications move, so its duration is part of the RTO.
"""

from __future__ import annotations

import difflib
import os
import re
import shlex
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from mirrordrill.harness.drill.context import DrillContext, now_ms
from mirrordrill.harness.drill.schema import Scenario
from mirrordrill.harness.drill.schema_timeline import Failover, RunbookCommandDef
from mirrordrill.primitives.config_refs import ConfigRefError, RefResolver, has_ref
from mirrordrill.primitives.process import ManagedProcess, program_path_problem

RUNBOOK_DIR = "runbook"  # in the run folder: one log per command run
ENV_PREFIX = "MIRRORDRILL_"


class RunbookFailed(RuntimeError):
    """A runbook command exited non-zero, timed out, or could not start; the message names it and its log."""


@dataclass(frozen=True)
class FailoverContext:
    """The failover a runbook command belongs to (its own, or the latest one before it)."""

    kind: str  # planned_failover | unplanned_failover
    source: str
    target: str


def env_name(cluster: str) -> str:
    """A cluster's name as an environment variable suffix: ``dr-west`` -> ``DR_WEST``."""
    return re.sub(r"[^A-Za-z0-9]", "_", cluster).upper()


def context_env(ctx: DrillContext, step_name: str, failover: FailoverContext | None) -> dict[str, str]:
    """The ``MIRRORDRILL_*`` variables a runbook command sees (documented in docs/drill-files.md)."""
    a = ctx.stable_address  # re-pointed by each failover: its value now
    return _context(ctx.scenario, failover, step_name, str(ctx.out_dir), str(ctx.drill_dir or ""),
                    f"{ctx.elapsed():.1f}", lambda c: ctx.env.cluster(c).bootstrap,
                    (a.bootstrap, a.points_to) if a is not None else None)


def context_names(scenario: Scenario, failover: FailoverContext | None) -> frozenset[str]:
    """The names ``context_env`` sets for a step of ``scenario`` (``failover``: its own or the latest
    earlier one), from the same code: what validate checks a command's references against."""
    stable = ("", "") if scenario.stable_address is not None else None  # the engine adds one exactly then
    return frozenset(_context(scenario, failover, "", "", "", "", lambda c: "", stable))


def _context(scenario: Scenario, failover: FailoverContext | None, step: str, run_dir: str, drill_dir: str,
             elapsed_s: str, bootstrap: Callable[[str], str], stable: tuple[str, str] | None) -> dict[str, str]:
    """The one list of context variables; the values only a running drill knows are passed in."""
    clusters = list(scenario.clusters)
    env = {
        "MIRRORDRILL_SCENARIO": scenario.name,
        "MIRRORDRILL_STEP": step,
        "MIRRORDRILL_RUN_DIR": run_dir,
        # commands run in the run folder; a script beside the drill file is "$MIRRORDRILL_DRILL_DIR/x.sh"
        "MIRRORDRILL_DRILL_DIR": drill_dir,
        "MIRRORDRILL_CLUSTERS": ",".join(clusters),
        "MIRRORDRILL_ELAPSED_S": elapsed_s,
    }
    for c in clusters:
        env[f"MIRRORDRILL_BOOTSTRAP_{env_name(c)}"] = bootstrap(c)
    if stable is not None:
        env["MIRRORDRILL_STABLE_ADDRESS"], env["MIRRORDRILL_STABLE_POINTS_TO"] = stable
    if failover is not None:
        env.update({
            "MIRRORDRILL_FAILOVER_KIND": failover.kind,
            "MIRRORDRILL_FAILOVER_FROM": failover.source,
            "MIRRORDRILL_FAILOVER_TO": failover.target,
            "MIRRORDRILL_FAILOVER_FLOW": f"{failover.source}->{failover.target}",
            "MIRRORDRILL_TARGET_BOOTSTRAP": bootstrap(failover.target),
        })
    return env


SHELL = ("bash", "-euo", "pipefail", "-c")  # an unset variable is an error, not an empty word (rm -rf "$DIR/")


def argv_of(command: str | list[str]) -> list[str]:
    """A list runs as is; a string runs through bash with unset variables, failed commands and failed
    pipes as errors, so a misspelled variable stops the command instead of acting on what is left."""
    return list(command) if isinstance(command, list) else [*SHELL, command]


def describe_command(command: str | list[str], limit: int = 60) -> str:
    text = command if isinstance(command, str) else shlex.join(command)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def command_problems(command: str | list[str], base_dir: Path | None) -> list[str]:
    """What can be told about a command without running it: its program must exist and run."""
    if isinstance(command, str):
        try:
            shlex.split(command)
        except ValueError as e:
            return [f"the shell command {command!r} does not parse ({e}); check its quotes"]
        if shutil.which(SHELL[0]) is None:
            return [f"a shell string runs through {SHELL[0]}, which is not on PATH; install it or give the "
                    "command as a list"]
        return []
    problem = program_path_problem(command[0], base_dir, "give its full path, or a shell string to run it "
                                   f"through {SHELL[0]}")
    return [problem] if problem else []


def _command_env(ctx: DrillContext, command: RunbookCommandDef, name: str) -> dict[str, str]:
    """The command's ``env`` with ``${env:...}``/``${file:...}`` resolved: a secret reaches the command only."""
    resolver = RefResolver(base_dir=ctx.drill_dir)
    try:
        return {k: resolver.resolve(v) if has_ref(v) else v for k, v in command.env.items()}
    except ConfigRefError as e:
        raise RunbookFailed(f"runbook {name!r}: {e}") from None


def _log_path(ctx: DrillContext, name: str) -> Path:
    folder = ctx.out_dir / RUNBOOK_DIR
    folder.mkdir(parents=True, exist_ok=True)
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-")[:60] or "command"
    return folder / f"{len(list(folder.glob('*.log'))) + 1:02d}-{slug}.log"


def run_command(ctx: DrillContext, command: RunbookCommandDef, name: str,
                failover: FailoverContext | None) -> str:
    """Run one command to its end; returns the outcome line, raises RunbookFailed when it failed."""
    argv = argv_of(command.command)
    if "/" in argv[0] and not Path(argv[0]).is_absolute() and ctx.drill_dir is not None:
        argv[0] = str(ctx.drill_dir / argv[0])
    # The team's own command keeps the user's whole environment (their DNS or cloud credentials).
    env = {**os.environ, **context_env(ctx, name, failover), **_command_env(ctx, command, name)}
    log = _log_path(ctx, name)
    # A managed process: its whole group is killed on timeout or Ctrl-C, and the environment's
    # supervisor stops it on every exit path.
    # In the run folder: what a command writes by a relative path stays with the run. The user's
    # environment is kept (their DNS tool or cloud CLI needs its credentials).
    proc = ManagedProcess(name=f"runbook {name}", argv=argv, log_path=log, env=env, cwd=ctx.out_dir,
                          stop_timeout_s=5.0)
    t = now_ms()
    start = time.monotonic()
    try:
        proc.start()
    except OSError as e:
        raise RunbookFailed(f"runbook {name!r} could not start {argv[0]}: {e}") from None
    ctx.env.supervisor.add(proc)
    try:
        code = _wait(ctx, proc, command.timeout)
    finally:
        if proc.running:  # a timeout or a stopped drill: the command and its children are killed
            proc.kill()
        proc.reap_group(grace_s=1.0)  # nothing the command started outlives its step
        proc.stop()
        ctx.env.supervisor.remove(proc)
    took = time.monotonic() - start
    where = log.relative_to(ctx.out_dir)
    if code is None:
        outcome = f"timed out after {command.timeout:g}s and was killed (output: {where})"
        ctx.record(f"runbook {name}", "runbook", t, now_ms(), "timeout", outcome)
        raise RunbookFailed(f"runbook {name!r} {outcome}")
    outcome = f"exit {code} in {took:.1f}s (output: {where})"
    ctx.record(f"runbook {name}", "runbook", t, now_ms(), "ok" if code == 0 else "failed", outcome)
    if code != 0:
        tail = proc.log_tail(5).strip().splitlines()
        raise RunbookFailed(f"runbook {name!r} failed: {outcome}" + (f"; last line: {tail[-1]}" if tail else ""))
    return outcome


def _wait(ctx: DrillContext, proc: ManagedProcess, timeout_s: float) -> int | None:
    """The exit code, or None on timeout; a drill being stopped stops the command too."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        code = proc.wait(min(0.2, max(0.0, deadline - time.monotonic())))
        if code is not None:
            return code
        if ctx.stop_requested.is_set():
            raise RunbookFailed("the drill is being stopped; the runbook command was stopped with it")
    return proc.returncode


def run_failover_runbook(ctx: DrillContext, step: Failover) -> list[str]:
    """A failover's own runbook, in order; the first failure stops it and fails the failover."""
    failover = failover_of(step)
    return [run_command(ctx, c, c.name or describe_command(c.command), failover) for c in step.runbook]


def failover_before(timeline: list, step) -> FailoverContext | None:
    """The latest failover earlier in the timeline than ``step`` (by identity), if any."""
    latest = None
    for s in timeline:
        if s is step:
            return latest
        if isinstance(s, Failover):
            latest = FailoverContext(s.do, s.source, s.target)
    return latest


def failover_of(step: Failover) -> FailoverContext:
    return FailoverContext(step.do, step.source, step.target)


def definition_problems(command: RunbookCommandDef, base_dir: Path | None, scenario: Scenario,
                        failover: FailoverContext | None) -> list[tuple[tuple[str, ...], str]]:
    """A runbook command's problems as (field, message), for validate; ``failover``: the step's own
    or the latest earlier one, which decides the context variables it gets."""
    out: list[tuple[tuple[str, ...], str]] = [(("command",), m) for m in command_problems(command.command, base_dir)]
    out += [(("command",), m) for m in unknown_references(command.command, scenario, failover)]
    hidden = sorted(k for k in command.env if k.startswith(ENV_PREFIX))
    if hidden:
        out.append((("env",), f"{', '.join(hidden)} would hide the drill's own context; the {ENV_PREFIX}* "
                              "variables are set by the harness (docs/drill-files.md lists them): rename yours"))
    return out


_REFERENCE = re.compile(r"\$\{?(" + ENV_PREFIX + r"\w+)")


def unknown_references(command: str | list[str], scenario: Scenario, failover: FailoverContext | None) -> list[str]:
    """``$MIRRORDRILL_X`` or ``${MIRRORDRILL_X}`` naming a variable the harness does not set for the step."""
    known = context_names(scenario, failover)
    with_failover = context_names(scenario, FailoverContext("", "", ""))
    words = [command] if isinstance(command, str) else command
    names = dict.fromkeys(m.group(1) for w in words for m in _REFERENCE.finditer(w))
    return [f"${name} is not set for this step, and unset variables are errors; {_fix(name, known, with_failover)}"
            for name in names if name not in known]


def _fix(name: str, known: frozenset[str], with_failover: frozenset[str]) -> str:
    if name in with_failover:
        return "it is set in a failover's runbook and in the steps after a failover: move the step after one"
    # compared without the common prefix, which would make every name look alike
    close = difflib.get_close_matches(name.removeprefix(ENV_PREFIX), [k.removeprefix(ENV_PREFIX) for k in known],
                                      n=1, cutoff=0.6)
    if close:
        return f"did you mean {ENV_PREFIX}{close[0]}?"
    return f"this step has {', '.join(sorted(known))}"
