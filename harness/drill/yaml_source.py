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
        self.file, self.line, self.message = file, line, message
        super().__init__(f"{file}:{line or '?'}: YAML syntax error: {message}")


MERGE_TAG = "tag:yaml.org,2002:merge"
# A drill file is a few kilobytes; the largest shipped one is far below both caps. Without them a
# "billion laughs" file of a few hundred bytes (anchors of anchors) expands into gigabytes.
MAX_FILE_BYTES = 1024 * 1024
MAX_VALUES = 10_000  # mappings, lists, keys and scalars after every alias is expanded
MAX_DEPTH = 50  # levels of nesting; PyYAML's composer recurses once per level


def _build(node: yaml.Node, path: Path_, lines: dict[Path_, int], file: str,
           building: frozenset[int] = frozenset()) -> Any:
    lines.setdefault(path, node.start_mark.line + 1)
    if id(node) in building:  # "&a [*a]": an anchor used inside itself would recurse forever
        raise YamlSyntaxError(file, node.start_mark.line + 1, "an anchor is used inside its own value (&name … *name)")
    building = building | {id(node)}
    if isinstance(node, yaml.MappingNode):
        out: dict = {}
        merged: dict = {}
        for key_node, value_node in node.value:
            if key_node.tag == MERGE_TAG:  # "<<: *base", as Compose files write it
                merged.update(_merge_source(value_node, path, lines, file, key_node.start_mark.line + 1, building))
                continue
            line = key_node.start_mark.line + 1
            if not isinstance(key_node, yaml.ScalarNode):
                raise YamlSyntaxError(file, line, "a key must be a plain name, not a list or a mapping ('? …')")
            key = _scalar(key_node)
            if key in out:
                # PyYAML keeps the last of a repeated key: a second "expectations:" would
                # silently drop the first block's limits.
                raise YamlSyntaxError(file, line, f"{_dotted(path + (key,))!r} is given twice (first on line "
                                                  f"{lines[path + (key,)]}); keep one, or merge the two")
            lines[path + (key,)] = line
            out[key] = _build(value_node, path + (key,), lines, file, building)
        # Keys written in the mapping itself win over merged ones, as YAML's merge key defines.
        return {**merged, **out}
    if isinstance(node, yaml.SequenceNode):
        return [_build(item, path + (i,), lines, file, building) for i, item in enumerate(node.value)]
    return _scalar(node)


def _merge_source(node: yaml.Node, path: Path_, lines: dict[Path_, int], file: str, line: int,
                  building: frozenset[int]) -> dict:
    """The mapping(s) a merge key brings in; the first of several wins, as YAML's merge key defines."""
    sources = node.value if isinstance(node, yaml.SequenceNode) else [node]
    out: dict = {}
    for source in reversed(sources):
        if not isinstance(source, yaml.MappingNode):
            # named at the '<<' line: an alias's own mark is where its anchor was defined
            raise YamlSyntaxError(file, line, "'<<' merges a mapping (or a list of mappings) into this one, e.g. '<<: *base'")
        out.update(_build(source, path, lines, file, building))
    return out


def _dotted(path: Path_) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".")


def _scalar(node: yaml.Node) -> Any:
    # The resolver has already tagged the node: construct the value from that tag. (Serializing
    # the node and loading it again fails for an empty value such as "timeline:".)
    try:
        return yaml.SafeLoader("").construct_object(node, deep=True)
    except yaml.constructor.ConstructorError:  # a tag such as !custom or !!python/name:…
        raise YamlSyntaxError("", node.start_mark.line + 1,
                              f"tag {node.tag!r} is not plain YAML data; a drill file uses no tags") from None


class _NestedTooDeep(Exception):
    """Aliases nest values past MAX_DEPTH (the text alone may nest a few levels); ``line`` is where."""

    def __init__(self, line: int):
        self.line = line


def _expanded_size(root: yaml.Node) -> int:
    """How many values ``root`` holds once every alias is expanded, counted without expanding:
    a node reached through several aliases is counted once per use from its memoized size. Its
    depth once expanded is bounded too (aliases of deeply nested anchors nest without the text
    showing it), so the walk never goes deeper than MAX_DEPTH."""
    seen: dict[int, tuple[int, int]] = {}  # id -> (values, levels below it)

    def visit(node: yaml.Node, depth: int) -> tuple[int, int]:
        if id(node) in seen:
            values, height = seen[id(node)]
        else:
            seen[id(node)] = (1, 0)  # an anchor used inside itself: _build names it, here it counts once
            children = ([x for kv in node.value for x in kv] if isinstance(node, yaml.MappingNode)
                        else node.value if isinstance(node, yaml.SequenceNode) else [])
            values, height = 1, 0
            for child in children:
                if depth + 1 > MAX_DEPTH:
                    raise _NestedTooDeep(child.start_mark.line + 1)
                child_values, child_height = visit(child, depth + 1)
                values, height = values + child_values, max(height, child_height + 1)
            seen[id(node)] = (values, height)
        if depth + height > MAX_DEPTH:
            raise _NestedTooDeep(node.start_mark.line + 1)
        return values, height

    return visit(root, 0)[0]


def _check_depth(text: str, file: str) -> None:
    """Refuse deep nesting from the parser's events (a loop, not recursion) before composing,
    which would hit Python's recursion limit slowly."""
    depth = 0
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                raise YamlSyntaxError(file, event.start_mark.line + 1 if event.start_mark is not None else None,
                                      f"the values are nested more than {MAX_DEPTH} levels deep; a drill file "
                                      "nests a few levels (clusters: primary: brokers)")
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


def _too_big(size: int) -> str:
    return (f"the file is {size:,} bytes; a drill file is at most {MAX_FILE_BYTES:,} bytes (1 MiB): "
            "split it, or move data out of it")


def _compose(text: str, file: str) -> yaml.Node | None:
    """The document's node graph (aliases shared, not expanded); one plain line for what cannot be read."""
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_FILE_BYTES:
        raise YamlSyntaxError(file, None, _too_big(size))
    try:
        _check_depth(text, file)
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        raise YamlSyntaxError(file, mark.line + 1 if mark else None, str(e.problem or e)) from None
    try:
        values = _expanded_size(node) if node is not None else 0
    except _NestedTooDeep as e:
        raise YamlSyntaxError(file, e.line, f"the values are nested more than {MAX_DEPTH} levels deep once its "
                                            "aliases (*name) are expanded; a drill file nests a few levels") from None
    if values > MAX_VALUES:
        raise YamlSyntaxError(file, None, f"the file holds {values:,} values once its aliases (*name) are "
                                          f"expanded; a drill file holds at most {MAX_VALUES:,}: use fewer "
                                          "aliases of aliases (this is how a 'billion laughs' file looks)")
    return node


def load_yaml(text: str, file: str) -> tuple[Any, SourceMap]:
    """Parse one YAML document into plain Python plus a map from value paths to line numbers."""
    node = _compose(text, file)
    lines: dict[Path_, int] = {}
    try:
        data = _build(node, (), lines, file) if node is not None else None
    except YamlSyntaxError as e:
        if e.file:
            raise
        raise YamlSyntaxError(file, e.line, e.message) from None
    return data, SourceMap(file, lines)


def read_drill_text(path: Path) -> str:
    """A drill file's text; YamlSyntaxError (line None) with one plain line for a folder or a binary file."""
    path = Path(path)
    if path.is_dir():
        raise YamlSyntaxError(str(path), None, "this is a folder; give a drill file (e.g. scenarios/quickstart.yaml)")
    if path.is_file() and (size := path.stat().st_size) > MAX_FILE_BYTES:  # not read into memory at all
        raise YamlSyntaxError(str(path), None, _too_big(size))
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise YamlSyntaxError(str(path), None, f"not a UTF-8 text file (byte {e.start} cannot be read); "
                                               "a drill file is YAML text") from None


def load_yaml_file(path: Path) -> tuple[Any, SourceMap]:
    return load_yaml(read_drill_text(path), str(path))
