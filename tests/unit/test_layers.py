"""Imports point one way: primitives -> replicator/, loadgen/ -> harness/ -> reports/ -> the CLI.

Every product module's imports are read with ``ast`` (``import``, ``from … import``, constant
arguments of ``importlib.import_module``/``__import__``, and ``"package.module:Class"`` strings
that a registry loads lazily), and any that points up or sideways across the layers fails the
test with the file and line, so the layout stays what the README says it is.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("primitives", "replicator", "loadgen", "harness", "reports")

# Layer of a module: the longest matching prefix wins. Same number = sideways (forbidden
# between different prefixes, e.g. replicator <-> loadgen); a module may always import its own
# top-level package, except that harness below the CLI may not import harness.cli.
LAYERS: dict[str, int] = {
    "primitives": 0,
    "replicator": 1,
    "loadgen": 1,
    "harness": 2,
    "reports": 3,
    "harness.cli": 4,
}
# reports/ reads the saved results of a drill and nothing else of the harness.
ALLOWED_CROSS = {("reports", "harness.results")}

_LAZY_REF = re.compile(r"^((?:%s)(?:\.\w+)+):\w+$" % "|".join(PACKAGES))


def layer_key(module: str) -> str:
    """The LAYERS entry a dotted module name belongs to (the longest matching prefix)."""
    best = ""
    for key in LAYERS:
        if (module == key or module.startswith(key + ".")) and len(key) > len(best):
            best = key
    return best


@dataclass(frozen=True)
class ImportSite:
    file: Path
    line: int
    importer: str
    imported: str

    def __str__(self) -> str:
        return f"{self.file.relative_to(REPO)}:{self.line}: {self.importer} imports {self.imported}"


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _resolve_relative(importer: str, is_package: bool, level: int, name: str | None) -> str:
    base = importer.split(".") if is_package else importer.split(".")[:-1]
    base = base[: len(base) - (level - 1)] if level > 1 else base
    return ".".join(base + ([name] if name else []))


def imports_of(path: Path) -> list[ImportSite]:
    importer = module_name(path)
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[ImportSite] = []

    def add(node: ast.AST, name: str) -> None:
        if name.split(".")[0] in PACKAGES:
            found.append(ImportSite(path, node.lineno, importer, name))

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(node, alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                add(node, _resolve_relative(importer, path.name == "__init__.py", node.level, node.module))
            elif node.module in PACKAGES:
                for alias in node.names:  # "from harness import results" imports harness.results
                    add(node, f"{node.module}.{alias.name}")
            elif node.module:
                add(node, node.module)
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in ("import_module", "__import__", "resolve_name"):
                target = _constant_import_target(node, name)
                if target is None:
                    # a name computed at run time cannot be checked: only the registry that is
                    # itself checked through its "module:Class" strings may do that
                    if module_name(path) not in DYNAMIC_IMPORTERS:
                        found.append(ImportSite(path, node.lineno, importer, f"<computed {name}(…)>"))
                elif target.startswith("."):
                    package = next((k.value.value for k in node.keywords
                                    if k.arg == "package" and isinstance(k.value, ast.Constant)), importer)
                    add(node, package + target if target != "." else package)
                else:
                    add(node, target)
            # ["python", "-m", "harness.x"]: a module run as a program is imported too
            for a, b in zip(node.args, node.args[1:]):
                if isinstance(a, ast.Constant) and a.value == "-m" and isinstance(b, ast.Constant) \
                        and isinstance(b.value, str):
                    add(node, b.value)
        elif isinstance(node, (ast.List, ast.Tuple)):
            elts = node.elts
            for a, b in zip(elts, elts[1:]):
                if isinstance(a, ast.Constant) and a.value == "-m" and isinstance(b, ast.Constant) \
                        and isinstance(b.value, str):
                    add(node, b.value)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            match = _LAZY_REF.match(node.value)
            if match:
                add(node, match.group(1))
    return found


# Modules allowed to import a name computed at run time: the replicator registry, whose
# targets are the "module:Class" strings checked above.
DYNAMIC_IMPORTERS = {"harness.replicators"}


def _constant_import_target(call: ast.Call, name: str) -> str | None:
    """The module a call imports when it is spelled out in the code, None when computed."""
    if not call.args or not isinstance(call.args[0], ast.Constant) or not isinstance(call.args[0].value, str):
        return None
    target = call.args[0].value
    if name == "resolve_name":
        return target.partition(":")[0] if ":" in target else target.rsplit(".", 1)[0]
    if name == "__import__":
        fromlist = next((k.value for k in call.keywords if k.arg == "fromlist"),
                        call.args[3] if len(call.args) > 3 else None)
        if isinstance(fromlist, (ast.List, ast.Tuple)) and len(fromlist.elts) == 1 \
                and isinstance(fromlist.elts[0], ast.Constant):
            return f"{target}.{fromlist.elts[0].value}"  # __import__("harness", fromlist=["cli"])
    return target


def product_files() -> list[Path]:
    return sorted(p for pkg in PACKAGES for p in (REPO / pkg).rglob("*.py"))


def violation(site: ImportSite) -> str | None:
    """Why this import breaks the layering, or None."""
    if site.imported.startswith("<computed"):
        return "imports a module whose name is computed at run time: the layers cannot be checked"
    src, dst = layer_key(site.importer), layer_key(site.imported)
    if not src or not dst:
        return None
    if (src, dst) in ALLOWED_CROSS or any(site.imported == d or site.imported.startswith(d + ".")
                                          for s, d in ALLOWED_CROSS if s == src):
        return None
    if src == dst:
        return None
    if src.split(".")[0] == dst.split(".")[0] and LAYERS[dst] < LAYERS[src]:
        return None  # e.g. harness.cli importing the rest of harness
    if LAYERS[dst] > LAYERS[src]:
        return f"points up ({src} is layer {LAYERS[src]}, {dst} is layer {LAYERS[dst]})"
    if LAYERS[dst] == LAYERS[src]:
        return f"points sideways ({src} and {dst} are both layer {LAYERS[src]})"
    if src == "reports" and dst.split(".")[0] == "harness":
        return "reports/ may import only harness.results from the harness"
    return None


def test_every_import_points_down():
    bad = [f"{site}: {why}" for path in product_files() for site in imports_of(path)
           if (why := violation(site))]
    assert not bad, "imports across the layers the wrong way:\n" + "\n".join(bad)


def test_the_walk_sees_every_kind_of_import(tmp_path, monkeypatch):
    # The checker itself must be able to fail: each form of import it claims to read.
    pkg = tmp_path / "loadgen"
    pkg.mkdir()
    (pkg / "bad.py").write_text(
        "import harness.environment\n"
        "from replicator.config import X\n"
        "from primitives import process\n"
        "import importlib\n"
        "importlib.import_module('reports.render')\n"
        "KINDS = {'x': 'harness.replicators.pyspark:PySparkReplicator'}\n"
        "def later():\n"
        "    from harness.scenario import engine\n"
        "    importlib.import_module('.render', package='reports')\n"
        "    importlib.import_module(f'harness.{later}')\n"
        "    __import__('reports', fromlist=['plots'])\n"
        "    run(['python', '-m', 'harness.cli'])\n"
        "from . import envelope\n"
    )
    monkeypatch.setattr(__import__(__name__, fromlist=["REPO"]), "REPO", tmp_path)
    sites = imports_of(pkg / "bad.py")
    reasons = {(s.imported, s.line): violation(s) for s in sites}
    assert reasons[("harness.environment", 1)].startswith("points up")
    assert reasons[("replicator.config", 2)].startswith("points sideways")
    assert reasons[("primitives.process", 3)] is None
    assert reasons[("reports.render", 5)].startswith("points up")
    assert reasons[("harness.replicators.pyspark", 6)].startswith("points up")
    assert reasons[("harness.scenario", 8)].startswith("points up")  # inside a function
    assert reasons[("reports.render", 9)].startswith("points up")  # relative, with package=
    assert reasons[("<computed import_module(…)>", 10)].startswith("imports a module whose name is computed")
    assert reasons[("reports.plots", 11)].startswith("points up")
    assert reasons[("harness.cli", 12)].startswith("points up")
    assert reasons[("loadgen", 13)] is None  # relative, within its own package


@pytest.mark.parametrize("importer, imported, ok", [
    ("reports.render", "harness.results", True),
    ("reports.render", "harness.scenario.model", False),
    ("harness.cli", "reports.render", True),
    ("harness.scenario.engine", "reports.render", False),
    ("harness.scenario.engine", "harness.cli", False),
    ("replicator.app", "primitives.process", True),
    ("primitives.process", "harness.environment", False),
])
def test_layer_rules(importer, imported, ok):
    site = ImportSite(REPO / "x.py", 1, importer, imported)
    assert (violation(site) is None) == ok
