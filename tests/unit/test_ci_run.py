"""CI (.ci/run) runs the code checks before the tests and stops at the first failing one."""

from pathlib import Path

CI_RUN = Path(__file__).resolve().parents[2] / ".ci" / "run"


def _commands() -> list[str]:
    lines = (line.strip() for line in CI_RUN.read_text().splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def test_ci_runs_the_code_checks_before_the_tests_and_stops_on_a_failure():
    commands = _commands()
    assert "set -euo pipefail" in commands  # a failing check ends the run with its exit code
    assert "./mirrordrill lint" in commands
    assert commands[-1] == "exec ./mirrordrill test"  # the README's test command, last
    assert commands.index("./mirrordrill lint") < commands.index("exec ./mirrordrill test")
