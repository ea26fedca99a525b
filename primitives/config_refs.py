"""Kafka config-provider references: ``${env:NAME}``, ``${file:PATH:KEY}``, ``${dir:PATH:FILE}``.

A scenario names a secret by where it lives, never by its value; the harness resolves the
reference when it needs the value (to hand it to a client, or to write a 0600 file in the
drill's secret folder). The syntax and meaning follow Kafka's own providers
(``EnvVarConfigProvider``, ``FileConfigProvider``, ``DirectoryConfigProvider``), so a
properties file that works with Kafka's ``config.providers`` means the same thing here.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

PROVIDERS = ("env", "file", "dir")

# Kafka's ConfigTransformer pattern: ${provider:[path:]key}; the path may not hold '}'.
_REFERENCE = re.compile(r"\$\{([A-Za-z][A-Za-z0-9_-]*):(?:([^}]*?):)?([^}:]*?)\}")
_ANY_REFERENCE = re.compile(r"\$\{[^}]*\}")


class ConfigRefError(ValueError):
    """A reference that cannot be resolved; the message names the reference, the cause and the fix."""


@dataclass(frozen=True)
class ConfigRef:
    """One parsed reference: the provider, an optional path and the key."""

    provider: str
    path: str | None
    key: str
    text: str

    def describe(self) -> str:
        """A safe description of where the value comes from (never the value)."""
        if self.provider == "env":
            return f"environment variable {self.key}"
        if self.provider == "file":
            return f"key {self.key!r} of properties file {self.path}"
        return f"file {self.key!r} in folder {self.path}"


def find_refs(value: str) -> list[ConfigRef]:
    """Every well-formed reference in ``value``, in order."""
    return [ConfigRef(m.group(1), m.group(2), m.group(3), m.group(0)) for m in _REFERENCE.finditer(value)]


def has_ref(value: object) -> bool:
    """True when ``value`` is a string holding at least one reference."""
    return isinstance(value, str) and bool(_REFERENCE.search(value))


def is_pure_ref(value: object) -> bool:
    """True when ``value`` is exactly one reference and nothing else (how a secret must be written)."""
    return isinstance(value, str) and _REFERENCE.fullmatch(value.strip()) is not None


def check_ref_syntax(value: str) -> list[str]:
    """Problems with the references in ``value`` that need no file or environment (for validate)."""
    problems = []
    for match in _ANY_REFERENCE.finditer(value):
        text = match.group(0)
        parsed = _REFERENCE.fullmatch(text)
        if parsed is None:
            problems.append(f"{text!r} is not a reference: write ${{env:NAME}}, ${{file:PATH:KEY}} or ${{dir:PATH:FILE}}")
            continue
        ref = ConfigRef(parsed.group(1), parsed.group(2), parsed.group(3), text)
        problem = _shape_problem(ref)
        if problem:
            problems.append(problem)
    return problems


def _shape_problem(ref: ConfigRef) -> str | None:
    if ref.provider not in PROVIDERS:
        return (f"{ref.text}: unknown provider {ref.provider!r}; valid providers: "
                + ", ".join(PROVIDERS))
    if not ref.key:
        return f"{ref.text}: the reference names no key"
    if ref.provider == "env" and ref.path is not None:
        return f"{ref.text}: an env reference is ${{env:NAME}} (no path)"
    if ref.provider in ("file", "dir") and not ref.path:
        example = "${file:/path/to/creds.properties:password}" if ref.provider == "file" else "${dir:/path/to/secrets:password}"
        return f"{ref.text}: a {ref.provider} reference needs a path and a key, e.g. {example}"
    return None


class RefResolver:
    """Resolves references against an environment and the file system; reads each file once."""

    def __init__(self, environ: Mapping[str, str] | None = None, base_dir: Path | None = None):
        self._environ = os.environ if environ is None else environ
        # Relative paths are read from the scenario's folder, not from wherever the CLI was started.
        self._base = base_dir
        self._properties: dict[Path, dict[str, str]] = {}

    def resolve(self, value: str) -> str:
        """``value`` with every reference replaced by what it names; raises ConfigRefError."""
        problems = check_ref_syntax(value)
        if problems:
            raise ConfigRefError("; ".join(problems))
        return _REFERENCE.sub(lambda m: self._lookup(ConfigRef(m.group(1), m.group(2), m.group(3), m.group(0))), value)

    def resolve_mapping(self, settings: Mapping[str, object]) -> dict[str, object]:
        """A copy of ``settings`` with references in string values resolved."""
        return {k: self.resolve(v) if isinstance(v, str) else v for k, v in settings.items()}

    def _path(self, raw: str) -> Path:
        path = Path(raw).expanduser()
        return path if path.is_absolute() or self._base is None else self._base / path

    def _lookup(self, ref: ConfigRef) -> str:
        if ref.provider == "env":
            if ref.key not in self._environ:
                raise ConfigRefError(f"{ref.text}: environment variable {ref.key} is not set; export it before the run")
            return self._environ[ref.key]
        path = self._path(ref.path or "")
        if ref.provider == "file":
            props = self._read_properties(path, ref)
            if ref.key not in props:
                raise ConfigRefError(f"{ref.text}: {path} has no key {ref.key!r} (keys there: "
                                     f"{', '.join(sorted(props)) or 'none'})")
            return props[ref.key]
        target = path / ref.key
        if not path.is_dir():
            raise ConfigRefError(f"{ref.text}: {path} is not a folder; a dir reference is ${{dir:FOLDER:FILE}}")
        # Like Kafka's DirectoryConfigProvider: only files directly in the folder.
        if target.parent != path or not target.is_file():
            raise ConfigRefError(f"{ref.text}: no file {ref.key!r} in {path}")
        return _read_text(target, ref)

    def _read_properties(self, path: Path, ref: ConfigRef) -> dict[str, str]:
        if path not in self._properties:
            if not path.is_file():
                raise ConfigRefError(f"{ref.text}: properties file {path} does not exist")
            self._properties[path] = parse_properties(_read_text(path, ref))
        return self._properties[path]


def _read_text(path: Path, ref: ConfigRef) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigRefError(f"{ref.text}: cannot read {path}: {err.__class__.__name__}") from None


def parse_properties(text: str) -> dict[str, str]:
    """Key/value pairs of a Java properties file (``=``, ``:`` or space; ``#``/``!`` comments; ``\\`` continuations)."""
    out: dict[str, str] = {}
    logical: list[str] = []
    for raw in text.splitlines():
        line = raw.lstrip()
        if not logical and (not line or line.startswith(("#", "!"))):
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:
            logical.append(line[:-1])
            continue
        logical.append(line)
        whole = "".join(logical)
        logical = []
        match = re.match(r"((?:\\.|[^=:\s\\])+)\s*[=:\s]?\s*(.*)$", whole)
        if match:
            out[_unescape(match.group(1))] = _unescape(match.group(2))
    return out


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t", "r": "\r"}.get(m.group(1), m.group(1)), text)

