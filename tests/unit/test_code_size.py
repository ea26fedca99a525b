"""Size limits of product code (issue 41, item 3): a function or class a newcomer can read in one go.

Anywhere in product code no function over 80 lines and no class over 300; in harness/drill/, the
drill's domain that the engine's phases compose, no function over 60 and no class over 250.
A size counts every line from ``def``/``class`` to the last line of its body (docstring and
comments included), as ast's line numbers give it.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("primitives", "replicator", "loadgen", "harness", "reports")
STRICT = "harness/drill/"
LIMITS = {"def": 80, "class": 300}
STRICT_LIMITS = {"def": 60, "class": 250}

# Over their limit when the limits came in; each one to be shrunk, then removed from here (the test
# fails on an entry that no longer needs to be here, so the list only shrinks). Current size in lines.
# Functions and classes over the limits, with their size, until they are split: empty now, and
# the test fails when an entry shrinks or goes, so a new one cannot linger here.
ALLOWED: dict[str, int] = {}


def _sizes(path: Path) -> dict[str, tuple[str, int]]:
    """``qualified name -> (def or class, lines)`` of every function and class in one file, nested ones too."""
    out: dict[str, tuple[str, int]] = {}

    def walk(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = prefix + child.name
                kind = "class" if isinstance(child, ast.ClassDef) else "def"
                out[name] = (kind, child.end_lineno - child.lineno + 1)
                walk(child, name + ".")
            else:
                walk(child, prefix)
    walk(ast.parse(path.read_text(), str(path)), "")
    return out


def oversized(root: Path = ROOT) -> dict[str, int]:
    """Every function or class of product code over its limit: ``path::name -> lines``."""
    out: dict[str, int] = {}
    for package in PRODUCT:
        for path in sorted((root / package).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            limits = STRICT_LIMITS if rel.startswith(STRICT) else LIMITS
            for name, (kind, lines) in _sizes(path).items():
                if lines > limits[kind]:
                    out[f"{rel}::{name}"] = lines
    return out


def test_no_function_or_class_of_product_code_is_over_its_limit():
    found = oversized()
    new = {k: v for k, v in found.items() if k not in ALLOWED or v > ALLOWED[k]}
    assert not new, f"over the size limit (def {LIMITS['def']}/class {LIMITS['class']}; in {STRICT}: " \
                    f"def {STRICT_LIMITS['def']}/class {STRICT_LIMITS['class']}); split them: {new}"


def test_the_allow_list_names_only_what_is_still_over_its_limit():
    """A shrunk function leaves the list: it can never grow back unnoticed."""
    found = oversized()
    stale = {k: v for k, v in ALLOWED.items() if k not in found or found[k] < v}
    assert not stale, f"shrunk or gone: remove them from ALLOWED or lower their size to today's: " \
                      f"{ {k: found.get(k) for k in stale} }"


def test_the_limits_catch_a_long_function_and_a_long_class_in_the_drill(tmp_path):
    """The measure itself: 61 lines in harness/drill/ are too many, 61 elsewhere are not."""
    body = "".join(f"    x{i} = {i}\n" for i in range(60))
    for package in PRODUCT:
        (tmp_path / package).mkdir()
    (tmp_path / "harness" / "drill").mkdir()
    (tmp_path / "harness" / "drill" / "long.py").write_text(f"def f():\n{body}\n\nclass C:\n" + body * 5)
    (tmp_path / "loadgen" / "fine.py").write_text(f"def f():\n{body}")
    assert oversized(tmp_path) == {"harness/drill/long.py::f": 61, "harness/drill/long.py::C": 301}
