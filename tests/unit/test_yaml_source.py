"""Drill-file YAML: a repeated key is an error with both lines, merge keys work, non-text input is one line."""

from __future__ import annotations

import pytest

from mirrordrill.harness.drill.yaml_source import (
    MAX_DEPTH,
    MAX_FILE_BYTES,
    MAX_VALUES,
    YamlSyntaxError,
    load_yaml,
    load_yaml_file,
)


def test_a_repeated_key_is_rejected_with_both_lines():
    text = "name: x\nexpectations:\n  lost: 0\ntimeline: []\nexpectations:\n  duplicates: 0\n"
    with pytest.raises(YamlSyntaxError) as e:
        load_yaml(text, "d.yaml")
    assert e.value.line == 5
    assert "'expectations' is given twice (first on line 2)" in str(e.value)


def test_a_repeated_nested_key_names_its_path():
    text = "clusters:\n  primary: {brokers: 1}\n  primary: {brokers: 3}\n"
    with pytest.raises(YamlSyntaxError) as e:
        load_yaml(text, "d.yaml")
    assert e.value.line == 3 and "'clusters.primary' is given twice (first on line 2)" in str(e.value)


def test_merge_keys_merge_and_the_mapping_s_own_keys_win():
    text = ("base: &base\n  latency_ms: 20\n  jitter_ms: 2\n"
            "links:\n  - <<: *base\n    between: [a, b]\n    latency_ms: 50\n")
    data, source = load_yaml(text, "d.yaml")
    assert data["links"][0] == {"latency_ms": 50, "jitter_ms": 2, "between": ["a", "b"]}
    assert source.line_of(("links", 0, "between")) == 6


def test_a_merge_key_of_a_scalar_is_one_plain_line():
    with pytest.raises(YamlSyntaxError, match="'<<' merges a mapping"):
        load_yaml("base: &b 3\nx:\n  <<: *b\n", "d.yaml")


def test_a_folder_and_a_binary_file_are_one_line_each(tmp_path):
    with pytest.raises(YamlSyntaxError, match="this is a folder"):
        load_yaml_file(tmp_path)
    binary = tmp_path / "drill.yaml"
    binary.write_bytes(b"name: \xff\xfe\x00x\n")
    with pytest.raises(YamlSyntaxError, match="not a UTF-8 text file"):
        load_yaml_file(binary)


def test_empty_values_and_typed_scalars_load_as_yaml_defines():
    data, _ = load_yaml("timeline:\nrate: 200\nratio: 0.5\nenabled: true\nname: '90'\nwhen: 2026-11-23\n", "d.yaml")
    assert data["timeline"] is None and data["rate"] == 200 and data["ratio"] == 0.5
    assert data["enabled"] is True and data["name"] == "90" and str(data["when"]) == "2026-11-23"


@pytest.mark.parametrize("text, line, phrase", [
    ("name: !custom x\n", 1, "tag '!custom' is not plain YAML data"),
    ("name: !!python/name:os.system x\n", 1, "is not plain YAML data"),
    ("name: x\nclusters: &a [*a]\n", 2, "an anchor is used inside its own value"),
    ("name: x\n? [a, b]\n: 1\n", 2, "a key must be a plain name"),
])
def test_tags_self_referencing_anchors_and_complex_keys_are_one_line(text, line, phrase):
    with pytest.raises(YamlSyntaxError) as e:
        load_yaml(text, "d.yaml")
    assert e.value.line == line and phrase in str(e.value) and str(e.value).startswith("d.yaml:")


def _laughs(levels: int) -> str:
    """A "billion laughs" document: each anchor is a list of nine aliases of the one before."""
    lines = ["a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for i in range(1, levels):
        prev, cur = chr(ord("a") + i - 1), chr(ord("a") + i)
        lines.append(f"{cur}: &{cur} [{', '.join([f'*{prev}'] * 9)}]")
    return "\n".join(lines) + "\n"


def test_aliases_that_expand_past_the_cap_are_one_line_without_expanding_them():
    with pytest.raises(YamlSyntaxError) as e:
        load_yaml(_laughs(9), "d.yaml")  # 342 bytes, 490 million values once expanded
    assert "490,329,064 values once its aliases (*name) are expanded" in str(e.value)
    assert f"at most {MAX_VALUES:,}" in str(e.value)


def test_aliases_within_the_cap_load():
    data, _ = load_yaml(_laughs(4), "d.yaml")  # 9**4 scalars: under the cap
    assert len(data["d"]) == 9 and data["d"][0][0][0] == ["lol"] * 9


def test_a_file_above_one_mib_is_refused_before_it_is_read(tmp_path):
    big = tmp_path / "drill.yaml"
    big.write_text("#" * (MAX_FILE_BYTES + 1))
    with pytest.raises(YamlSyntaxError, match=r"is 1,048,577 bytes; a drill file is at most 1,048,576 bytes"):
        load_yaml_file(big)
    with pytest.raises(YamlSyntaxError, match="at most 1,048,576 bytes"):
        load_yaml("#" * (MAX_FILE_BYTES + 1), "d.yaml")  # text handed over without a file (sweep, tests)


def test_deep_nesting_is_one_line_naming_its_line():
    with pytest.raises(YamlSyntaxError) as e:
        load_yaml("name: x\nclusters: " + "[" * 3000 + "]" * 3000 + "\n", "d.yaml")
    assert e.value.line == 2 and f"nested more than {MAX_DEPTH} levels deep" in str(e.value)


def test_nesting_built_from_aliases_is_one_line_though_the_text_nests_less_than_the_cap():
    # twelve anchors, each nested 47 levels around an alias of the one before: ~560 levels once
    # expanded, ~600 values (under the values cap), 1.3 KB of text nested at most 47 levels
    text = "\n".join(f"k{i}: &a{i} " + "[" * 47 + (f"*a{i - 1}" if i else "x") + "]" * 47 for i in range(12))
    with pytest.raises(YamlSyntaxError) as e:
        load_yaml(text, "d.yaml")
    assert f"nested more than {MAX_DEPTH} levels deep once its aliases" in str(e.value)


def test_aliases_of_nested_anchors_within_the_cap_load():
    data, _ = load_yaml("a: &a [[[x]]]\nb: &b [*a, *a]\nc: [*b]\n", "d.yaml")
    assert data["c"] == [[[[["x"]]], [[["x"]]]]]
