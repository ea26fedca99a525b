"""Running a shell recipe of the docs as a person types it: bash, in a scratch copy of the checkout."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from tests.doc_recipes import REPO


def scratch_checkout(dest: Path) -> Path:
    """A copy of the checkout's files (tracked and new, not ignored ones: no runs/, no caches), where a
    recipe may write what it writes (``runs/``, ``my-drill.yaml``) without touching the checkout."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                            check=True, capture_output=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        src = REPO / name
        if src.is_symlink():  # src/mirrordrill's links to the folders, harness/drill/scenarios: links again
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            (dest / name).symlink_to(os.readlink(src))
        elif src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    return dest


def recipe_env(**extra: str) -> dict[str, str]:
    """The test's environment (MIRRORDRILL_HOME: the wrapper finds the session's Python environment),
    without the checkout on PYTHONPATH: the scratch copy's wrapper puts itself there."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return {**env, **extra}


# Downloads only: what the fresh HOME shares with this one (Maven, Go modules and build cache, pip, npm).
DOWNLOAD_CACHES = (".m2", "go", ".cache/go-build", ".cache/pip", ".npm")


def fresh_home(root: Path) -> dict[str, str]:
    """An environment whose HOME is new: MIRRORDRILL_HOME and ~/.docker start empty."""
    real = Path.home()
    home = root / "home"
    cache = home / ".cache" / "mirrordrill"
    cache.mkdir(parents=True)
    for name in DOWNLOAD_CACHES:
        if (real / name).exists():
            (home / name).parent.mkdir(parents=True, exist_ok=True)
            (home / name).symlink_to(real / name)
    # the wrapper's Python environment is not what these recipes install: share it, named as the wrapper names it
    venv = Path(sys.executable).parents[1]
    (cache / venv.name).symlink_to(venv)
    env = recipe_env(HOME=str(home))
    env.pop("MIRRORDRILL_HOME", None)
    return env


# A failing line ends the script (-e), and a job the recipe started in the background (`up ... &`) must
# not outlive it: it would hold the clusters and the output pipe. A person's shell would keep it too;
# the person would then press Ctrl-C.
STOP_JOBS = "trap 'jobs -p | xargs -r kill 2>/dev/null; wait' EXIT\n"


def bash(script: str, cwd: Path, timeout_s: float, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``script`` in bash, stopping at the first failing line (``-e -o pipefail``), output and errors merged;
    its background jobs are stopped when it ends, and everything it started when it runs out of time."""
    proc = subprocess.Popen(["bash", "-e", "-o", "pipefail", "-c", STOP_JOBS + script], cwd=cwd,
                            env=env or recipe_env(), text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGTERM)
        out, _ = proc.communicate(timeout=120)
        raise AssertionError(f"recipe still running after {timeout_s:.0f}s:\n{out[-4000:]}") from None
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out)
