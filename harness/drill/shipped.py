"""The drills mirrordrill ships, by name: listed by ``mirrordrill drills``, run as ``mirrordrill run NAME``.

A drill argument is a path when that file exists or when it has a folder or a .yaml suffix. A bare
name is a file of that name (or NAME.yaml) in the working directory when there is one, so a team's
own drill wins over a shipped one; otherwise it names a shipped drill.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

# Package data (in a checkout a link to its scenarios/, resolved so that paths read as scenarios/NAME.yaml).
SHIPPED_DIR = (Path(__file__).parent / "scenarios").resolve()


@dataclass(frozen=True)
class ShippedDrill:
    name: str  # the file's stem, which is also its drill name
    path: Path
    summary: str  # the description's first sentence


def shipped_drills(folder: Path = SHIPPED_DIR) -> list[ShippedDrill]:
    drills = []
    for path in sorted(folder.glob("*.yaml")):
        data = yaml.safe_load(path.read_text()) or {}
        description = " ".join(str(data.get("description", "")).split())
        summary = description.split(". ", 1)[0].rstrip(".") + "." if description else ""
        drills.append(ShippedDrill(path.stem, path, summary))
    return drills


def drill_path(argument: str, folder: Path = SHIPPED_DIR) -> Path:
    """The file ``argument`` names: the path itself when it exists or has a folder or a .yaml suffix,
    else the shipped drill of that name when there is one (validation reports a file that is neither)."""
    path = Path(argument)
    if path.exists() or path.parent != Path(".") or path.suffix in (".yaml", ".yml"):
        return path
    if (own := Path(f"{argument}.yaml")).exists():  # the team's quickstart.yaml beside them, not ours
        return own
    shipped = folder / f"{argument}.yaml"
    return shipped if shipped.exists() else path


def missing_drill_hint(argument: str, folder: Path = SHIPPED_DIR) -> str:
    """What to say about a drill argument that names no file."""
    if Path(argument).parent != Path(".") or Path(argument).suffix in (".yaml", ".yml"):
        return "no such file"
    names = ", ".join(d.name for d in shipped_drills(folder))
    return f"no such file, and no shipped drill of that name (shipped: {names}; 'mirrordrill drills' describes them)"


def drill_argument(value: str) -> str:
    """An argparse ``type=`` for a drill argument: a shipped drill's name becomes its file's path."""
    return str(drill_path(value))
