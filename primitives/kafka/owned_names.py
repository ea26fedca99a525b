"""Which names a drill owns on a cluster it did not start: its prefix, anchored, and MM2's internals.

Pure string rules, shared by validation (a flow pattern must stay inside the prefix), the Kafka
proxy's guard (a request may only touch owned names) and the cleanup that deletes them.
"""

from __future__ import annotations

import re

_QUANTIFIER_START = tuple("*+?{")


class PatternRefused(ValueError):
    """A flow pattern that could match a name outside the prefix; the message says how to write it."""


def _literal_head(pattern: str, length: int) -> tuple[str, str]:
    """The first ``length`` literal characters of a regex (``\\-`` read as ``-``) and the rest; the head
    is shorter when a regex construct comes first."""
    head, i = "", 0
    while len(head) < length and i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern) and not pattern[i + 1].isalnum():
            head, i = head + pattern[i + 1], i + 2
        elif ch in ".^$*+?{}[]()|\\":
            break
        else:
            head, i = head + ch, i + 1
    return head, pattern[i:]


def anchored_pattern(pattern: str, prefix: str) -> str:
    """``pattern`` as the regex a replicator receives on an existing cluster: the escaped prefix, then
    the rest as one group, so no alternation or wildcard in the rest can match outside the prefix.

    The pattern must start with the prefix, written literally (``md-t-orders``) or escaped
    (``md\\-t\\-orders``); the rest is a regex on its own (balanced, so it cannot close the group).
    """
    head, rest = _literal_head(pattern, len(prefix))
    if head != prefix:
        raise PatternRefused(f"pattern {pattern!r} does not start with the prefix {prefix!r} written literally, so "
                             f"it could match the team's own names: write it as {prefix} followed by the rest "
                             f"(e.g. {prefix}orders or {prefix}.*); the rest is matched after the prefix")
    if rest.startswith(_QUANTIFIER_START):
        raise PatternRefused(f"pattern {pattern!r}: {rest[0]!r} right after the prefix would repeat its last "
                             f"character; write the prefix whole, then the rest (e.g. {prefix}.*)")
    try:
        re.compile(rest)
        re.compile(f"{re.escape(prefix)}(?:{rest})")  # what the replicators run: e.g. '(?i)' may not move
    except re.error as e:
        raise PatternRefused(f"pattern {pattern!r}: what follows the prefix, {rest!r}, is not a regex on its own "
                             f"({e}); it is matched after {prefix!r} as one group") from None
    if _has_top_level_bar(rest):
        # as a free regex 'md-t-a|orders' also matches the team's 'orders'; read after the prefix it would
        # silently mean something else than written
        raise PatternRefused(f"pattern {pattern!r}: a '|' outside parentheses makes each alternative a pattern of "
                             f"its own, not one under the prefix; group them after it (e.g. {prefix}(?:a|b)) or "
                             "list each as its own pattern")
    return f"{re.escape(prefix)}(?:{rest})"


def _has_top_level_bar(regex: str) -> bool:
    """True when ``regex`` (one that compiles) has a ``|`` outside every group and character class."""
    depth, class_start, i = 0, -1, 0  # class_start: where the open character class's members begin
    while i < len(regex):
        ch = regex[i]
        if ch == "\\":
            i += 2
            continue
        if class_start >= 0:
            if ch == "]" and i > class_start:  # a ']' first in a class is one of its members
                class_start = -1
        elif ch == "[":
            class_start = i + 2 if regex.startswith("^", i + 1) else i + 1
        elif ch in "()":
            depth += 1 if ch == "(" else -1
        elif ch == "|" and depth == 0:
            return True
        i += 1
    return False


def owned_topic(name: str, prefix: str) -> bool:
    return name.startswith(prefix) or re.fullmatch(rf"mm2-[a-z-]+\.{re.escape(prefix)}[A-Za-z0-9_-]*\.internal",
                                                   name) is not None
