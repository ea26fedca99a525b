"""The names a drill owns on a cluster it did not start, found and deleted.

``mirrordrill cleanup`` removes what an interrupted drill left with it, ``run`` deletes what it
created at the end, and a failback "wipes" an existing cluster with it. Only names the drill
owns: those starting with the prefix, and MirrorMaker 2's internal topics of replication aliases
that start with it (``mm2-offset-syncs.<alias>.internal``, …).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from primitives.kafka.existing_cluster import OWNED_PREFIX

TIMEOUT_S = 30.0


class CleanupRefused(ValueError):
    """A prefix too broad to be a drill's own; the message says what is valid."""


@dataclass
class CleanupResult:
    cluster: str
    topics: list[str] = field(default_factory=list)
    groups: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def check_prefix(prefix: str) -> None:
    """A prefix that can only be a drill's: the same rule as a drill file's owned_prefix."""
    if not re.fullmatch(OWNED_PREFIX, prefix):
        raise CleanupRefused(f"--prefix {prefix!r} is refused: a drill's prefix is 3 to 40 characters, lower-case "
                             "letters, digits, '-' or '_', starting with a letter and ending with '-' or '_' (like a "
                             "drill file's owned_prefix, e.g. md-team-), so it cannot match a team's own names")


# A character after which the rest of a pattern would repeat the prefix's last character, not match after it.
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


def find(admin: AdminClient, cluster: str, prefix: str) -> CleanupResult:
    """What ``prefix`` names on the cluster (read-only)."""
    check_prefix(prefix)
    topics = sorted(t for t in admin.list_topics(timeout=TIMEOUT_S).topics if owned_topic(t, prefix))
    listed = admin.list_consumer_groups(request_timeout=TIMEOUT_S).result()
    groups = sorted(g.group_id for g in listed.valid if g.group_id.startswith(prefix))
    # a broker that could not answer (a coordinator still loading) would hide its groups
    errors = [f"listing groups: {e}" for e in listed.errors]
    return CleanupResult(cluster, topics, groups, errors=errors)


def remove(admin: AdminClient, found: CleanupResult) -> CleanupResult:
    """Delete the groups, then the topics, of ``found``; every failure is kept, none stops the rest."""
    done = CleanupResult(found.cluster)
    if found.groups:
        _settle(admin.delete_consumer_groups(found.groups, request_timeout=TIMEOUT_S), "group", done.groups,
                done.errors, " (a group with running members cannot be deleted: stop the drill's consumers first)")
    if found.topics:
        _settle(admin.delete_topics(found.topics, operation_timeout=TIMEOUT_S), "topic", done.topics, done.errors, "")
        _wait_gone(admin, set(done.topics))
    return done


def _settle(futures: dict, kind: str, deleted: list[str], errors: list[str], hint: str) -> None:
    for name, fut in futures.items():
        try:
            fut.result()
            deleted.append(name)
        except KafkaException as e:
            errors.append(f"{kind} {name}: {e.args[0].str()}{hint}")


def _wait_gone(admin: AdminClient, topics: set[str], timeout_s: float = TIMEOUT_S) -> None:
    """Topic deletion is asynchronous on the brokers: return once metadata no longer lists them."""
    deadline = time.monotonic() + timeout_s
    while topics and time.monotonic() < deadline:
        if not topics & set(admin.list_topics(timeout=TIMEOUT_S).topics):
            return
        time.sleep(0.5)
