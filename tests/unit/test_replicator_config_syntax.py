"""The replicator's configuration: Java properties syntax as MM2 reads it."""

from __future__ import annotations

import pytest

from mirrordrill.primitives.config_errors import ConfigError
from mirrordrill.primitives.properties_syntax import parse_mm2_list, read_properties


def test_properties_separators_and_comments() -> None:
    text = "# comment\n! also a comment\n\na=1\nb: 2\nc 3\nd = 4\ne\t=\t5\nf =\ng\n  h   =   spaced value   \n"
    lines = {p.key: (p.value, p.line) for p in read_properties(text)}
    assert lines == {
        "a": ("1", 4),
        "b": ("2", 5),
        "c": ("3", 6),
        "d": ("4", 7),
        "e": ("5", 8),
        "f": ("", 9),
        "g": ("", 10),
        "h": ("spaced value   ", 11),  # Java keeps trailing whitespace; ConfigDef trims later
    }


def test_properties_separator_rules() -> None:
    lines = {p.key: p.value for p in read_properties("k1 = = v\nk2 :v\nk3  v:w\nk4=a=b\n")}
    assert lines == {"k1": "= v", "k2": "v", "k3": "v:w", "k4": "a=b"}


def test_properties_continuation_lines() -> None:
    text = "topics = orders, \\\n    payments, \\\n\t  refunds\nnext = 1\n"
    lines = read_properties(text)
    assert [(p.key, p.value, p.line) for p in lines] == [
        ("topics", "orders, payments, refunds", 1),
        ("next", "1", 4),
    ]


def test_properties_continuation_details() -> None:
    # An even number of trailing backslashes is an escaped backslash, not a continuation.
    assert [(p.key, p.value) for p in read_properties("a = x\\\\\nb = y\n")] == [("a", "x\\"), ("b", "y")]
    # A comment line never continues; a continued line never starts a comment.
    lines = read_properties("# c \\\na = 1\\\n# not a comment\n")
    assert [(p.key, p.value, p.line) for p in lines] == [("a", "1# not a comment", 2)]
    # A blank line ends a continuation; a backslash at the end of the file is dropped.
    assert [(p.key, p.value) for p in read_properties("a = 1\\\n\nb = 2\\")] == [("a", "1"), ("b", "2")]


def test_properties_escapes() -> None:
    text = "key\\ with\\ spaces = v\nk\\=e\\:y = tab\\there\\nnew\\u0041\\u00e9\nback = c:\\\\dir\n"
    lines = {p.key: p.value for p in read_properties(text)}
    assert lines == {"key with spaces": "v", "k=e:y": "tab\there\nnewAé", "back": "c:\\dir"}


def test_properties_line_endings() -> None:
    lines = read_properties("a=1\r\nb=2\rc=3\n")
    assert [(p.key, p.line) for p in lines] == [("a", 1), ("b", 2), ("c", 3)]


def test_properties_malformed_unicode_escape() -> None:
    with pytest.raises(ConfigError, match=r"line 2.*\\u"):
        read_properties("a = 1\nb = \\u12\n", "x.properties")


def test_mm2_list_syntax() -> None:
    assert parse_mm2_list(" a , b,c ") == ["a", "b", "c"]
    assert parse_mm2_list("   ") == []
    assert parse_mm2_list("a,,b") == ["a", "", "b"]
