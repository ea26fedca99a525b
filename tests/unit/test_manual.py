"""The manual builds: ``mkdocs build --strict`` with mkdocs.yml's validation, so a link to a missing page or
heading, a page left out of the navigation, or a missing snippet of the README fails the suite."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_the_manual_builds_without_a_warning(tmp_path):
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}  # the theme's notice about its successor, not about our pages
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(REPO / "mkdocs.yml"),
                           "--site-dir", str(tmp_path / "site")], capture_output=True, text=True, env=env, timeout=300)
    warnings = [line for line in done.stderr.splitlines() if line.startswith(("WARNING", "ERROR"))]
    assert done.returncode == 0 and not warnings, "\n".join(warnings) or done.stderr[-3000:]
    assert (tmp_path / "site" / "tutorials" / "first-drill" / "index.html").is_file()
    home = (tmp_path / "site" / "index.html").read_text()
    assert "<td><code>./mirrordrill run FILE" in home  # the README's command table, included as a table
