"""YAML loading that remembers where every value came from, so errors can name the line."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

Path_ = tuple[Any, ...]  # keys and list indexes from the document root


@dataclass
class SourceMap:
    """Line numbers (1-based) of every mapping key and list item in one YAML document."""

    file: str
    lines: dict[Path_, int]

    def line_of(self, path: Path_) -> int | None:
        """The line of ``path``, or of its nearest ancestor that has one."""
        path = tuple(path)
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path[:-1]
        return self.lines.get((), 1)


class YamlSyntaxError(ValueError):
    def __init__(self, file: str, line: int | None, message: str):
        self.file, self.line = file, line
        super().__init__(f"{file}:{line or '?'}: YAML syntax error: {message}")


def _build(node: yaml.Node, path: Path_, lines: dict[Path_, int]) -> Any:
    lines.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        out = {}
        for key_node, value_node in node.value:
            key = yaml.safe_load(yaml.serialize(key_node)) if not isinstance(key_node, yaml.ScalarNode) \
                else _scalar(key_node)
            lines[path + (key,)] = key_node.start_mark.line + 1
            out[key] = _build(value_node, path + (key,), lines)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_build(item, path + (i,), lines) for i, item in enumerate(node.value)]
    return _scalar(node)


def _scalar(node: yaml.ScalarNode) -> Any:
    return yaml.safe_load(yaml.serialize(node))


def load_yaml(text: str, file: str) -> tuple[Any, SourceMap]:
    """Parse one YAML document into plain Python plus a map from value paths to line numbers."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        raise YamlSyntaxError(file, mark.line + 1 if mark else None, str(e.problem or e)) from None
    lines: dict[Path_, int] = {}
    data = _build(node, (), lines) if node is not None else None
    return data, SourceMap(file, lines)


def load_yaml_file(path: Path) -> tuple[Any, SourceMap]:
    return load_yaml(Path(path).read_text(), str(path))
