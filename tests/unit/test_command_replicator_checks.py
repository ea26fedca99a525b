"""The command replicator's program is found before anything starts, and shell syntax is refused
unless the drill asks for a shell (``replication.shell: true``), which then really gets one."""

from __future__ import annotations

import subprocess

from mirrordrill.harness.cli import commands as cli
from mirrordrill.harness.drill.replicators import FlowSpec, ReplicationSetup, make_replicator
from tests.unit.test_replicator_adapters import environment
from tests.unit.test_scenario_validation import BASE


def _command(command: str, shell: bool = False) -> str:
    return BASE.replace("replication:\n", f"replication:\n  replicator: command\n  command: {command}\n"
                                          + ("  shell: true\n" if shell else ""), 1)


def _validate(tmp_path, text: str, capsys) -> tuple[int, str]:
    path = tmp_path / "drill.yaml"
    path.write_text(text)
    code = cli.main(["validate", str(path)])
    return code, capsys.readouterr().err


def test_a_program_in_the_drill_folder_must_be_executable(tmp_path, capsys):
    script = tmp_path / "bin" / "replicate"
    script.parent.mkdir()
    script.write_text("#!/bin/sh\nexec sleep 60\n")
    code, err = _validate(tmp_path, _command("bin/replicate --from {source_bootstrap}"), capsys)
    assert code == cli.EXIT_USAGE and f"program bin/replicate is not executable; chmod +x {script}" in err, err
    script.chmod(0o755)
    code, err = _validate(tmp_path, _command("bin/replicate --from {source_bootstrap}"), capsys)
    assert code == cli.EXIT_OK, err


def test_shell_syntax_is_valid_when_the_drill_asks_for_a_shell(tmp_path, capsys):
    text = _command("'no-such-replicator --from {source_bootstrap} | tee repl.log'", shell=True)
    code, err = _validate(tmp_path, text, capsys)
    assert code == cli.EXIT_OK, err  # the shell finds the program: only at run time


def test_a_shell_command_runs_through_sh_with_placeholders_quoted(tmp_path):
    setup = ReplicationSetup(environment(tmp_path), [FlowSpec("east", "west", topics=["pay .*"])])
    replicator = make_replicator("command", setup, command="printf '%s\\n' {topics_regex} | wc -l", shell=True)
    replicator._prepare()
    argv = replicator.process_for("east", "west").argv
    assert argv[:2] == ["/bin/sh", "-c"]
    # one argument however many spaces or stars the value holds: the pipe counts one line
    assert subprocess.run(argv, capture_output=True, text=True, check=True).stdout.strip() == "1"


def test_a_relative_program_is_run_from_the_drill_folder(tmp_path):
    setup = ReplicationSetup(environment(tmp_path), [FlowSpec("east", "west")])
    replicator = make_replicator("command", setup, command="bin/replicate {source}", base_dir=tmp_path / "drills")
    replicator._prepare()
    assert replicator.process_for("east", "west").argv == [str(tmp_path / "drills" / "bin" / "replicate"), "east"]
