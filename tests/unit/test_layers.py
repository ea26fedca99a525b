"""Imports point one way, down an ordered list of layers, and no two packages import each other.

Layers, lowest first (``LAYERS``): a module may import its own layer's package and any layer
below it; nothing else. ``replicator`` and ``loadgen`` share a layer and may not import each
other. Every product module's imports are read with ``ast`` (``import``, ``from … import``,
constant arguments of ``importlib.import_module``/``__import__``, ``-m`` module arguments, and
``"package.module:Class"`` strings that a registry loads lazily), and any that points up or
sideways fails the test with the file and line, so the layout stays what the manual says it is.

Every import names the one installed package, ``mirrordrill.<folder>``: a bare ``harness`` (or
``loadgen``, …) would load a second copy of each module it reaches wherever the checkout's root is
on the path (pytest's rootdir, ``python -m`` from the checkout), and other distributions on PyPI
use those names. Product code and tests alike fail on one.

Cycles: packages (folders) that are not nested in one another must not import each other,
directly or around a longer loop (``harness.lab.network`` -> ``harness.lab.brokers`` ->
``harness.lab.network`` fails), so each package can be read, tested and moved on its own.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("primitives", "replicator", "loadgen", "harness", "reports")
NAMESPACE = "mirrordrill"  # what every import of them is spelled with (src/mirrordrill links the folders)
BARE = "<bare>"  # the prefix of an import site that names a folder without the namespace

# The layers, lowest first; names on one line share a layer (and may not import each other).
LAYERS: tuple[tuple[str, ...], ...] = (
    ("primitives",),
    ("replicator", "loadgen"),
    ("harness.lab",),
    ("harness.drill",),
    ("harness.tools",),
    ("reports",),
    ("harness.cli",),
)
LAYER_OF: dict[str, int] = {name: rank for rank, names in enumerate(LAYERS) for name in names}

_LAZY_REF = re.compile(rf"^((?:{NAMESPACE}\.)?(?:{'|'.join(PACKAGES)})(?:\.\w+)+):\w+$")


def layer_key(module: str) -> str:
    """The layer entry a dotted module name belongs to ("" for none, e.g. ``harness`` itself)."""
    return next((key for key in LAYER_OF if module == key or module.startswith(key + ".")), "")


@dataclass(frozen=True)
class ImportSite:
    file: Path
    line: int
    importer: str
    imported: str

    def __str__(self) -> str:
        return f"{self.file.relative_to(REPO)}:{self.line}: {self.importer} imports {self.imported}"


def known_modules() -> set[str]:
    """Every product module and package, by dotted name."""
    return {module_name(p) for pkg in PACKAGES for p in (REPO / pkg).rglob("*.py")}


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
        """Record an import of one of ours, by the name within the namespace (or flagged bare)."""
        if name.startswith(NAMESPACE + "."):
            found.append(ImportSite(path, node.lineno, importer, name.removeprefix(NAMESPACE + ".")))
        elif name.split(".")[0] in PACKAGES:
            found.append(ImportSite(path, node.lineno, importer, BARE + name))

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(node, alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                add(node, f"{NAMESPACE}.{_resolve_relative(importer, path.name == '__init__.py', node.level, node.module)}")
            elif node.module == NAMESPACE or (node.module or "").removeprefix(NAMESPACE + ".") in PACKAGES:
                for alias in node.names:  # "from mirrordrill.harness import drill" imports harness.drill
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
                    add(node, f"{NAMESPACE}.{package + target if target != '.' else package}")
                else:
                    add(node, target)
            # ["python", "-m", "mirrordrill.harness.x"]: a module run as a program is imported too
            for a, b in pairwise(node.args):
                if isinstance(a, ast.Constant) and a.value == "-m" and isinstance(b, ast.Constant) \
                        and isinstance(b.value, str):
                    add(node, b.value)
        elif isinstance(node, (ast.List, ast.Tuple)):
            elts = node.elts
            for a, b in pairwise(elts):
                if isinstance(a, ast.Constant) and a.value == "-m" and isinstance(b, ast.Constant) \
                        and isinstance(b.value, str):
                    add(node, b.value)
        elif isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "pytest_plugins" for t in node.targets):
            for elt in getattr(node.value, "elts", []):  # plugins pytest imports by name
                if isinstance(elt, ast.Constant) and isinstance(elt.value, str):
                    add(node, elt.value)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            match = _LAZY_REF.match(node.value)
            if match:
                add(node, match.group(1))
    return found


# Modules allowed to import a name computed at run time: the replicator registry, whose
# targets are the "module:Class" strings checked above.
DYNAMIC_IMPORTERS = {"harness.drill.replicators"}


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
    if site.imported.startswith(BARE):
        name = site.imported.removeprefix(BARE)
        return f"imports {name} by its bare name: import {NAMESPACE}.{name} (the one package; a bare name loads a second copy)"
    if site.imported.startswith("<computed"):
        return "imports a module whose name is computed at run time: the layers cannot be checked"
    src, dst = layer_key(site.importer), layer_key(site.imported)
    if not src or not dst or src == dst:
        return None
    if LAYER_OF[dst] > LAYER_OF[src]:
        return f"points up ({src} is layer {LAYER_OF[src]}, {dst} is layer {LAYER_OF[dst]})"
    if LAYER_OF[dst] == LAYER_OF[src]:
        return f"points sideways ({src} and {dst} are both layer {LAYER_OF[src]})"
    return None


def test_every_import_points_down():
    bad = [f"{site}: {why}" for path in product_files() for site in imports_of(path)
           if (why := violation(site))]
    assert not bad, "imports across the layers the wrong way:\n" + "\n".join(bad)


def test_nothing_imports_our_folders_by_their_bare_names():
    files = [*product_files(), *sorted((REPO / "tests").rglob("*.py")), REPO / "conftest.py"]
    bad = [f"{site}: {violation(site)}" for path in files for site in imports_of(path)
           if site.imported.startswith(BARE)]
    assert not bad, "bare imports:\n" + "\n".join(bad)


def test_the_walk_sees_every_kind_of_import(tmp_path, monkeypatch):
    # The checker itself must be able to fail: each form of import it claims to read.
    pkg = tmp_path / "loadgen"
    pkg.mkdir()
    (pkg / "bad.py").write_text(
        "import mirrordrill.harness.lab.environment\n"
        "from mirrordrill.replicator.config import X\n"
        "from mirrordrill.primitives import process\n"
        "import importlib\n"
        "importlib.import_module('mirrordrill.reports.render')\n"
        "KINDS = {'x': 'mirrordrill.harness.drill.replicators.pyspark:PySparkReplicator'}\n"
        "def later():\n"
        "    from mirrordrill.harness.drill import engine\n"
        "    importlib.import_module('.render', package='reports')\n"
        "    importlib.import_module(f'harness.{later}')\n"
        "    __import__('mirrordrill.reports', fromlist=['plots'])\n"
        "    run(['python', '-m', 'mirrordrill.harness.cli.commands'])\n"
        "from . import envelope\n"
        "from harness.drill import results\n"
        "from mirrordrill import harness\n"
        "pytest_plugins = ['reports.pytest_run_report']\n"
    )
    monkeypatch.setattr(__import__(__name__, fromlist=["REPO"]), "REPO", tmp_path)
    sites = imports_of(pkg / "bad.py")
    reasons = {(s.imported, s.line): violation(s) for s in sites}
    assert reasons[("harness.lab.environment", 1)].startswith("points up")
    assert reasons[("replicator.config", 2)].startswith("points sideways")
    assert reasons[("primitives.process", 3)] is None
    assert reasons[("reports.render", 5)].startswith("points up")
    assert reasons[("harness.drill.replicators.pyspark", 6)].startswith("points up")
    assert reasons[("harness.drill", 8)].startswith("points up")  # inside a function
    assert reasons[("reports.render", 9)].startswith("points up")  # relative, with package=
    assert reasons[("<computed import_module(…)>", 10)].startswith("imports a module whose name is computed")
    assert reasons[("reports.plots", 11)].startswith("points up")
    assert reasons[("harness.cli.commands", 12)].startswith("points up")
    assert reasons[("loadgen", 13)] is None  # relative, within its own package
    assert "by its bare name" in reasons[(BARE + "harness.drill", 14)]
    assert reasons[("harness", 15)] is None  # the namespace's own subpackage, by itself
    assert "by its bare name" in reasons[(BARE + "reports.pytest_run_report", 16)]


@pytest.mark.parametrize("importer, imported, ok", [
    ("reports.render", "harness.drill.results", True),
    ("reports.render", "harness.tools.sweep.points", True),
    ("harness.tools.sweep.run", "reports.render", False),
    ("harness.lab.network.wan", "harness.drill.engine", False),
    ("harness.drill.engine", "harness.tools.sweep.run", False),
    ("replicator.app", "loadgen.histories", False),
    ("harness.cli.commands", "reports.render", True),
    ("harness.drill.engine", "reports.render", False),
    ("harness.drill.engine", "harness.cli.commands", False),
    ("replicator.app", "primitives.process", True),
    ("primitives.process", "harness.lab.environment", False),
])
def test_layer_rules(importer, imported, ok):
    site = ImportSite(REPO / "x.py", 1, importer, imported)
    assert (violation(site) is None) == ok


def package_of(module: str, packages: set[str]) -> str:
    """The package (folder) a module lives in: itself for a package's ``__init__``."""
    return module if module in packages else module.rpartition(".")[0]


def import_cycles(sites: Iterable[ImportSite], packages: set[str]) -> list[list[str]]:
    """Loops of imports between packages that are not nested in one another, each as a path."""
    edges: dict[str, set[str]] = {}
    for site in sites:
        src, dst = package_of(site.importer, packages), package_of(site.imported, packages)
        nested = src == dst or dst.startswith(src + ".") or src.startswith(dst + ".")
        if not nested and dst in packages:
            edges.setdefault(src, set()).add(dst)
    cycles: list[list[str]] = []
    done: set[str] = set()

    def walk(node: str, path: list[str]) -> None:
        for nxt in sorted(edges.get(node, ())):
            if nxt in path:
                loop = path[path.index(nxt):] + [nxt]
                if not any(set(loop) == set(c) for c in cycles):
                    cycles.append(loop)
            elif nxt not in done:
                walk(nxt, path + [nxt])
        done.add(node)

    for start in sorted(edges):
        if start not in done:
            walk(start, [start])
    return cycles


def test_no_import_cycle_between_packages():
    sites = [site for path in product_files() for site in imports_of(path)]
    packages = {module_name(p.parent / "__init__.py") for p in product_files() if p.name == "__init__.py"}
    cycles = import_cycles(sites, packages)
    assert not cycles, "packages that import each other:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_the_cycle_check_sees_a_loop_and_ignores_nesting():
    def site(importer: str, imported: str) -> ImportSite:
        return ImportSite(REPO / "x.py", 1, importer, imported)

    packages = {"harness.lab.network", "harness.lab.brokers", "harness.drill", "harness.drill.actions"}
    loop = [site("harness.lab.network.stable_address", "harness.lab.brokers.cluster"),
            site("harness.lab.brokers.existing", "harness.lab.network.kafka_proxy")]
    assert import_cycles(loop, packages) == [["harness.lab.brokers", "harness.lab.network", "harness.lab.brokers"]]
    nested = [site("harness.drill.actions.base", "harness.drill.context"),
              site("harness.drill.steps", "harness.drill.actions.registry")]
    assert import_cycles(nested, packages) == []
