"""Java ``.properties`` syntax, both ways: MirrorMaker 2 reads its configuration this way.

``read_properties`` reads as ``java.util.Properties.load`` does, keeping line numbers;
``format_property`` writes a line it reads back unchanged. Everything that writes a properties
file (``to_mm2_properties``, the harness's replication setup) writes through it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mirrordrill.primitives.config_errors import ConfigError


@dataclass(frozen=True)
class PropertyLine:
    """One ``key=value`` of a properties file, unescaped, with the line it starts on."""

    key: str
    value: str
    line: int
    raw: str = ""
    dropped_escapes: tuple[str, ...] = ()


_WHITESPACE = " \t\f"
_KNOWN_ESCAPES = "tnrfu"


def _odd_trailing_backslashes(text: str) -> bool:
    count = len(text) - len(text.rstrip("\\"))
    return count % 2 == 1


def _unescape(text: str, *, source: str, line: int) -> tuple[str, tuple[str, ...]]:
    out: list[str] = []
    dropped: list[str] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char != "\\":
            out.append(char)
            i += 1
            continue
        if i + 1 >= len(text):
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "u":
            digits = text[i + 2 : i + 6]
            if len(digits) != 4 or not all(c in "0123456789abcdefABCDEF" for c in digits):
                raise ConfigError(
                    "malformed \\uxxxx escape", source=source, line=line, key=text, valid="\\u followed by 4 hex digits"
                )
            out.append(chr(int(digits, 16)))
            i += 6
            continue
        out.append({"t": "\t", "n": "\n", "r": "\r", "f": "\f"}.get(nxt, nxt))
        if nxt not in _KNOWN_ESCAPES and nxt not in "\\=:#! ":
            dropped.append("\\" + nxt)
        i += 2
    return "".join(out), tuple(dropped)


def read_properties(text: str, source_name: str = "<properties>") -> list[PropertyLine]:
    """Read Java ``.properties`` text as ``java.util.Properties.load`` does, keeping line numbers.

    Handles ``#``/``!`` comments, ``=``/``:``/whitespace separators, backslash line
    continuations and escapes. There are no end-of-line comments in this format.
    """
    lines = re.split(r"\r\n|\r|\n", text)
    result: list[PropertyLine] = []
    index = 0
    while index < len(lines):
        first = lines[index].lstrip(_WHITESPACE)
        start = index + 1
        index += 1
        if not first or first[0] in "#!":
            continue
        logical = first
        while _odd_trailing_backslashes(logical):
            logical = logical[:-1]
            if index >= len(lines):
                break
            logical += lines[index].lstrip(_WHITESPACE)
            index += 1
        raw_key, raw_value = _split_key_value(logical)
        key, _ = _unescape(raw_key, source=source_name, line=start)
        value, dropped = _unescape(raw_value, source=source_name, line=start)
        result.append(PropertyLine(key, value, start, logical, dropped))
    return result


def _split_key_value(logical: str) -> tuple[str, str]:
    key_end = len(logical)
    value_start = len(logical)
    has_separator = False
    escaped = False
    for pos, char in enumerate(logical):
        if not escaped and char in "=:":
            key_end, value_start, has_separator = pos, pos + 1, True
            break
        if not escaped and char in _WHITESPACE:
            key_end, value_start = pos, pos + 1
            break
        escaped = (not escaped) if char == "\\" else False
    while value_start < len(logical):
        char = logical[value_start]
        if char in _WHITESPACE:
            value_start += 1
        elif not has_separator and char in "=:":
            has_separator = True
            value_start += 1
        else:
            break
    return logical[:key_end], logical[value_start:]


def parse_mm2_list(value: str) -> list[str]:
    """A list value as Kafka's ConfigDef reads it: trimmed, split on commas, blank means empty."""
    trimmed = value.strip()
    if not trimmed:
        return []
    return re.split(r"\s*,\s*", trimmed)


# -- writing ----------------------------------------------------------------------------
def _escape(text: str, *, is_key: bool) -> str:
    out: list[str] = []
    for pos, char in enumerate(text):
        if char == "\\":
            out.append("\\\\")
        elif char == "\t":
            out.append("\\t")
        elif char == "\n":
            out.append("\\n")
        elif char == "\r":
            out.append("\\r")
        elif char == "\f":
            out.append("\\f")
        elif char == " " and (is_key or pos == 0):
            out.append("\\ ")
        elif (char in "=:" and is_key) or (char in "#!" and pos == 0):
            out.append("\\" + char)
        elif ord(char) < 0x20 or ord(char) > 0x7E:
            # MM2 reads the file as ISO-8859-1; \\u escapes survive any encoding.
            out.append("".join(f"\\u{unit:04x}" for unit in _utf16_units(char)))
        else:
            out.append(char)
    return "".join(out)


def _utf16_units(char: str) -> list[int]:
    encoded = char.encode("utf-16-be")
    return [int.from_bytes(encoded[i : i + 2], "big") for i in range(0, len(encoded), 2)]


def format_property(key: str, value: str) -> str:
    """One ``key = value`` line that ``read_properties`` (and Java) reads back as exactly ``key``, ``value``."""
    return f"{_escape(key, is_key=True)} = {_escape(value, is_key=False)}"
