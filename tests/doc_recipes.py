"""Every shell recipe the docs show (a fenced ```bash block in README.md or docs/), and which test runs it.

Each block carries a ``<!-- recipe: ID -->`` line right before its fence, so a test names the
block it runs and an edit of the block changes what that test runs. ``COVERAGE`` says, for every
command line of every block, which test runs it and how:

- ``RUNS``: the test runs the line exactly as the docs show it (``script(ID, test)``);
- ``CHEAPLY``: the test runs the line with one declared change that keeps its file and parameters
  (pytest's ``--collect-only``), because the line as typed costs a long run;
- ``MAPPED``: another test runs the same drill file or command path; ``why`` says what differs.

``tests/unit/test_doc_recipes.py`` fails when a block has no id, a command line no entry claims,
or an entry names a test that does not exist or does not name the recipe.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MARKER = re.compile(r"^<!-- recipe: ([a-z0-9-]+) -->$")
FENCE = re.compile(r"^```bash\n(.*?)^```$", re.S | re.M)
HEREDOC = re.compile(r"<<-?\s*'?\"?(\w+)'?\"?")

RUNS, CHEAPLY, MAPPED = "runs", "cheaply", "mapped"


@dataclass(frozen=True)
class Recipe:
    """One fenced bash block: its id (None when the marker is missing), where it is, and its text."""

    id: str | None
    page: str
    line: int
    text: str

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"

    def commands(self) -> list[str]:
        """The block's command lines: continuations joined, a here-document kept with its command,
        comment-only and blank lines left out."""
        out: list[str] = []
        lines = self.text.splitlines()
        i = 0
        while i < len(lines):
            line = lines[i]
            i += 1
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            command = [line]
            while command[-1].endswith("\\") and i < len(lines):
                command.append(lines[i])
                i += 1
            heredoc = HEREDOC.search(command[0])
            if heredoc:
                while i < len(lines):
                    command.append(lines[i])
                    i += 1
                    if lines[i - 1].strip() == heredoc.group(1):
                        break
            out.append("\n".join(command))
        return out


@dataclass(frozen=True)
class Part:
    """The command lines of a recipe that start with ``starts`` ("" for all), and the test that covers them."""

    test: str  # a pytest node id without parameters: tests/…/test_x.py::test_name
    how: str = RUNS
    starts: str = ""
    change: str = ""  # CHEAPLY: what the test appends to each such line
    why: str = ""  # CHEAPLY and MAPPED: what the test does instead, and why that is enough


def pages() -> list[Path]:
    """README.md and every page of the manual."""
    return [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


def recipes() -> list[Recipe]:
    """Every fenced bash block of the README and the manual, in page order."""
    found = []
    for page in pages():
        text = page.read_text()
        for m in FENCE.finditer(text):
            before = text[:m.start()].rstrip("\n").rsplit("\n", 1)[-1]
            marker = MARKER.match(before)
            found.append(Recipe(marker.group(1) if marker else None, str(page.relative_to(REPO)),
                                text[:m.start()].count("\n") + 1, m.group(1)))
    return found


def recipe(recipe_id: str) -> Recipe:
    """The block with this id (the first, when two pages show the same recipe)."""
    return next(r for r in recipes() if r.id == recipe_id)


def part_of(recipe_id: str, command: str) -> Part:
    """The coverage part that claims ``command`` of the recipe: the longest matching prefix."""
    parts = [p for p in COVERAGE[recipe_id] if command.startswith(p.starts)]
    return max(parts, key=lambda p: len(p.starts))


def commands(recipe_id: str, test: str) -> list[str]:
    """The recipe's command lines that ``test`` covers, as the test runs them (CHEAPLY ones changed)."""
    lines = []
    for command in recipe(recipe_id).commands():
        part = part_of(recipe_id, command)
        if part.test == test and part.how != MAPPED:
            lines.append(command + part.change if part.how == CHEAPLY else command)
    if not lines:
        raise LookupError(f"recipe {recipe_id}: no command line is run by {test}")
    return lines


def words(script_text: str) -> list[list[str]]:
    """Each line's words as bash splits them, comments left out: two pages show the same command."""
    return [shlex.split(line, comments=True) for line in script_text.splitlines()]


def script(recipe_id: str, test: str) -> str:
    """Those command lines as one script, in the order the page shows them."""
    return "\n".join(commands(recipe_id, test)) + "\n"


HERE = "tests/integration/test_doc_recipes.py::"
QUICK, FIRST_DRILL = HERE + "test_the_quick_recipes_as_typed", HERE + "test_the_first_drill_as_typed"
DOCKER = "tests/containers/test_doc_recipes_docker.py::test_the_docker_recipes_on_a_fresh_cache"
DRILLS = "tests/drills/test_drills.py::test_drill"
MM2_RUN = "tests/integration/test_existing_clusters_run.py::" \
          "test_drills_on_existing_secure_clusters_pass_through_the_proxy_and_leave_nothing"
SUITE = Part("tests/suite.py::main", MAPPED, "./mirrordrill test",
             why="the command that runs this suite (tests/suite.py): whoever runs the suite runs it")
SHIPPED_DRILL = ("the drill tests run this very file (every shipped drill), at its short profile; the docs' "
                 "command runs the full profile of the same file")
MEASUREMENT = ("a measurement command (each point a drill run, three runs a point; the page gives the half hour it "
               "took): the drill it sweeps, scenarios/sweep-capacity.yaml, runs in the drill tests, and the sweep "
               "the command builds on a tiny drill in tests/integration/test_sweep.py")
QUICKSTART = "./mirrordrill run scenarios/quickstart.yaml"

COVERAGE: dict[str, tuple[Part, ...]] = {
    "quickstart": (Part(FIRST_DRILL, starts=QUICKSTART), SUITE),
    "getting-started": (Part(FIRST_DRILL, starts=QUICKSTART), SUITE),
    "first-drill-validate": (Part(FIRST_DRILL),),
    "first-drill-run": (Part(FIRST_DRILL),),
    "first-drill-report": (Part(FIRST_DRILL),),
    "first-drill-own-file": (Part(HERE + "test_the_first_drill_tutorials_own_file_as_typed"),),
    "drill-file-commands": (
        Part(QUICK, starts="./mirrordrill validate"),
        Part(HERE + "test_the_first_drill_tutorials_own_file_as_typed", MAPPED, "./mirrordrill run my-drill.yaml",
             why="the first drill tutorial's test runs `./mirrordrill run my-drill.yaml` as typed (its tutorial's file)"),
        Part(MM2_RUN, MAPPED, "./mirrordrill run my-drill.yaml --replicator mirrormaker2",
             why="`mirrordrill run FILE --replicator mirrormaker2` through the CLI, on a drill of that test's"),
    ),
    "mirrormaker2": (
        Part(QUICK, starts="./mirrordrill validate"),
        Part(MM2_RUN, MAPPED, "./mirrordrill run",
             why="`mirrordrill run FILE --replicator mirrormaker2` through the CLI, on a drill of that test's; "
                 "the quickstart against MM2 is the next recipe's (not in the suite: each drill is a full run)"),
    ),
    "mirrormaker2-drill-tests": (Part(QUICK, CHEAPLY, change=" --collect-only -q",
                                      why="collects one test per shipped drill against MM2; running them is "
                                          "every drill again"),),
    "ci-lint-and-drills": (
        Part(QUICK, starts="./mirrordrill validate"),
        Part(DRILLS, MAPPED, "./mirrordrill test tests/drills",
             why="the suite runs tests/drills (every shipped drill) and writes its own JUnit XML"),
    ),
    "ci-pytest-plugin": (Part("tests/integration/test_wheel.py::test_the_installed_tool_sets_up_runs_the_shipped_quickstart_"
                              "and_a_teams_drills_through_pytest",
                              MAPPED, why="`pytest --mirrordrill drills/` in a team's repository that `init` made, from "
                                          "the installed wheel, with JUnit XML (where init's pytest.ini puts it) and "
                                          "Allure results"),),
    "own-replicator": (
        Part(QUICK, starts="./mirrordrill validate"),
        Part("tests/integration/test_registries.py::test_a_fault_a_replicator_and_a_metric_registered_here_run_a_drill_"
             "on_real_brokers", MAPPED, "./mirrordrill run",
             why="a drill whose replicator is the command replicator's adapter running a program; /opt/myrepl "
                 "is the reader's own program"),
    ),
    "own-clusters": (Part(HERE + "test_the_own_clusters_tutorial_as_typed"),),
    "replicate-mm2-properties": (Part(HERE + "test_replicate_with_mm2_properties_as_typed"),),
    "replicator-crash-standalone": (
        Part("tests/integration/test_spark_standalone.py::test_a_killed_worker_loses_nothing", MAPPED,
             why="a worker killed on a standalone cluster under the replicator; the crash drill itself runs in "
                 "the drill tests on local Spark"),),
    "planned-failover": (Part(DRILLS, MAPPED, why=SHIPPED_DRILL),),
    "unplanned-failover": (Part(DRILLS, MAPPED, why=SHIPPED_DRILL),),
    "failback": (Part(DRILLS, MAPPED, why=SHIPPED_DRILL),),
    "capacity-sweep": (Part(DRILLS, MAPPED, why=MEASUREMENT),),
    "capacity-sweep-modes": (Part(DRILLS, MAPPED, why=MEASUREMENT),),
    "sizing-compression-sweep": (
        Part("tests/integration/test_sweep.py::test_two_point_sweep_writes_table_plot_recommendation_and_resumes",
             MAPPED, why="a measurement command (one drill run per codec): the sweep the command builds runs over "
                         "a tiny drill there (num_streams); tests/unit/test_sweep.py applies the compression "
                         "parameter to a drill"),),
    "sizing-existing-sweep": (
        Part("tests/integration/test_sizing_existing_sweep.py::"
             "test_the_sizing_sweep_on_existing_clusters_names_each_points_bottleneck", MAPPED,
             why="plan, then the tutorial's sweep with its parameters, on secure clusters `up` started, the drill's "
                 "existing: entries filled from the connection file as the tutorial says"),),
    "sizing-jfr": (
        Part("tests/integration/test_flight_recording.py::"
             "test_a_drill_with_jfr_leaves_each_replicator_node_s_recording_and_summary", MAPPED,
             why="a measurement command (two backlog drains of 600,000 records): the test runs a short drill of "
                 "the bundled replicator with the same flight recording and checks its recording and summary; "
                 "the sweep passes --jfr to each point's drill as it passes --spark-master"),),
    "checker-scaling-bench": (
        Part("tests/integration/test_checker_spark_standalone.py::"
             "test_the_spark_checker_on_two_standalone_executors_agrees_with_the_reference", MAPPED,
             why="a measurement command (2,000,000 records, each executor count on a fresh standalone master): "
                 "the test runs the Spark checker on two standalone executors over 30,000 records and compares "
                 "it with the reference, as the benchmark does"),),
    "containers-docker": (Part(DOCKER),),
    "docker-backend": (
        Part(DOCKER, starts="./mirrordrill images build"),
        Part("tests/integration/test_docker_backend.py::test_the_quickstart_drill_passes_on_containers", MAPPED,
             "./mirrordrill run", why="the quickstart drill on the docker backend, in a short form"),
    ),
    "chaos-lab": (Part(DOCKER),),
}
