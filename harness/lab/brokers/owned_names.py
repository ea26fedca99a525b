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

from mirrordrill.primitives.kafka.existing_cluster import OWNED_PREFIX
from mirrordrill.primitives.kafka.owned_names import owned_topic

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
