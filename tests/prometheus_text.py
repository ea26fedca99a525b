"""A strict reader of Prometheus text (format 0.0.4) for tests: prometheus_client is not a dependency."""

from __future__ import annotations

import re

_NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
_SAMPLE = re.compile(rf"^({_NAME})(\{{(.*)\}})? (\S+)$")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"(,|$)')


def parse(text: str) -> dict[str, dict]:
    """Strict reader of the 0.0.4 text format: every sample belongs to a family declared before it."""
    assert text.endswith("\n")
    families: dict[str, dict] = {}
    current = None
    for line in text.splitlines():
        if line.startswith("# HELP "):
            name, _, help_text = line[7:].partition(" ")
            assert name not in families, f"family {name} declared twice"
            assert help_text
            current = families[name] = {"help": help_text, "type": None, "samples": []}
        elif line.startswith("# TYPE "):
            name, kind = line[7:].split(" ")
            assert current is families.get(name) and current["type"] is None
            assert kind in ("counter", "gauge", "histogram")
            current["type"] = kind
        else:
            m = _SAMPLE.match(line)
            assert m, f"not a sample line: {line!r}"
            name, _, body, value = m.groups()
            suffixes = ("_bucket", "_sum", "_count") if current["type"] == "histogram" else ("",)
            base = next((name[: len(name) - len(s)] for s in suffixes if s and name.endswith(s)), name)
            assert base in families and families[base] is current, f"{name} outside its family"
            labels, pos = {}, 0
            while body and pos < len(body):
                lm = _LABEL.match(body, pos)
                assert lm, f"bad labels in {line!r}"
                labels[lm.group(1)] = re.sub(r'\\(.)', lambda e: "\n" if e.group(1) == "n" else e.group(1), lm.group(2))
                pos = lm.end()
            current["samples"].append((name, labels, float(value)))
    return families
