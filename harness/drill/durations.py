"""Durations as drill files write them: ``90``, ``90s``, ``1m30s``, ``500ms``, ``2h``."""

from __future__ import annotations

import math
import re

_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}

# What an editor checking a drill file against its JSON Schema accepts as a duration: seconds as
# a number, or the units above largest first (the order rule itself is parse_duration's).
DURATION_JSON_SCHEMA = {
    "anyOf": [
        {"type": "number", "minimum": 0},
        {"type": "string",
         "pattern": r"^\s*(?=\S)(\d+(\.\d+)?|(\d+(\.\d+)?h)?\s*(\d+(\.\d+)?m)?\s*(\d+(\.\d+)?s)?\s*(\d+(\.\d+)?ms)?)\s*$"},
    ],
    "description": "seconds (90) or a duration such as '90s', '1m30s', '500ms', '2h'",
}


def parse_duration(value: object) -> float:
    """Seconds in ``value``; ValueError naming what is valid otherwise."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a duration")
    if isinstance(value, (int, float)):
        if not math.isfinite(value):
            raise ValueError(f"duration {value} is not a finite number of seconds; write e.g. 90 or '10m'")
        if value < 0:
            raise ValueError(f"duration {value} is negative")
        return float(value)
    text = str(value).strip().replace(" ", "")
    if text.startswith("-"):
        raise ValueError(f"duration {value!r} is negative; write 0 or more, e.g. '90s'")
    if re.fullmatch(r"\d+(?:\.\d+)?", text):
        return float(text)  # a quoted number reads as seconds, as the unquoted one does
    pos, total, units = 0, 0.0, []
    for m in _PART.finditer(text):
        if m.start() != pos:
            break
        total += float(m.group(1)) * _UNITS[m.group(2)]
        units.append(m.group(2))
        pos = m.end()
    if not text or pos != len(text):
        raise ValueError(f"{value!r} is not a duration; write seconds (90) or e.g. '90s', '1m30s', '500ms'")
    order = [_UNITS[u] for u in units]
    if order != sorted(set(order), reverse=True):
        # "30s1m" or "1s1s" is most likely a typo: say so rather than add the parts up.
        raise ValueError(f"duration {value!r} repeats a unit or has them out of order; write the largest unit "
                         "first, each once, e.g. '1m30s'")
    return total
