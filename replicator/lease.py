"""Who of a replicator node's two drivers (the active and its standby) replicates: a lease on the target.

The lease is the membership of one static member, ``<group>.holder``, in a classic consumer
group on the flows' target cluster: Kafka's group coordinator already does what a lease needs
(a session the member keeps alive with heartbeats, expiry when they stop, and fencing of an
older member when a newer one joins under the same instance id, KIP-345), as Connect uses group
membership for its workers. A standby takes the lease when the group is empty (the holder's
session expired: it died, or was paused past ``session.timeout.ms``), or at once when it holds
the node's lock file (``LocalLock``): on one machine the kernel releases the lock the moment the
holder dies, so the standby need not wait for the session to expire, and its joining under the
holder's instance id evicts the dead member.

The lease decides who *tries* to replicate, not what lands: a holder paused and resumed may
still write for a moment, and that is what the transactional sink's fence stops
(``transactions``). A driver that finds it lost the lease stops (``LeaseLost``).
"""

from __future__ import annotations

import fcntl
import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

log = logging.getLogger("replicator")

# Kafka's lowest session timeout for a classic group (the broker's group.min.session.timeout.ms
# default): the longest a standby on another machine waits after its holder stops heartbeating.
SESSION_TIMEOUT_MS = 6000
HEARTBEAT_INTERVAL_MS = 500


class LeaseLost(RuntimeError):
    """This driver held the lease and another took it: it must stop replicating."""


class LocalLock:
    """An exclusive ``flock`` on the node's lock file, held by its active driver for as long as its process lives.

    Not inherited by the driver's JVM (the file is opened close-on-exec), so only the Python
    process's own death (a kill -9 too) releases it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def try_acquire(self) -> bool:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        self._fd = fd
        return True

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


class Lease:
    """The lease of one node, in group ``group`` on the cluster ``conn`` reaches (see the module's text)."""

    def __init__(self, conn: dict[str, Any], group: str, lock: LocalLock | None = None,
                 session_timeout_ms: int = SESSION_TIMEOUT_MS, first_only: bool = False) -> None:
        self.conn, self.group, self.lock = dict(conn), group, lock
        # the mutation suite's standby that never takes over: only a lease nobody held yet is taken
        self.first_only = first_only
        self.session_timeout_ms = session_timeout_ms
        # one partition, under the group's (drill-prefixed) name; ".internal", as MM2's own topics, which
        # MM2's default topics.exclude (and ours) leaves out, so no flow copies it
        self.topic = f"{group}.internal"
        self._admin = AdminClient(self.conn | {"log_level": 0})
        self._consumer: Consumer | None = None
        self._lost = threading.Event()
        self._assigned = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # --- taking it -------------------------------------------------------------------
    def acquire(self, stop: threading.Event, idle: Callable[[], None] = lambda: None, poll_s: float = 0.2) -> str | None:
        """Wait until this driver may take the lease, then join as its holder; why it took it, or None if stopped.

        ``idle`` runs between looks (the process writes its status there)."""
        self._ensure_topic()
        watch = _EmptyGroupWatch(self.session_timeout_ms / 1000)
        if self.first_only:
            if self._group_empty() and (self.lock is None or self.lock.try_acquire()):
                self._join()
                return "nobody held it yet (planted fault: a standby never takes over)"
            while not stop.is_set():
                idle()
                stop.wait(poll_s)
            return None
        while not stop.is_set():
            if self.lock is not None and self.lock.try_acquire():
                why = "the node's lock is free (its holder is gone)"
            elif watch.vacant(self._group_empty()):
                why = "the lease's group is empty (its holder's session expired, or none ever held it)"
                if self.lock is not None:
                    why += "; the lock is still held by a paused or stuck holder"
            else:
                idle()
                stop.wait(poll_s)
                continue
            self._join()
            return why
        return None

    def _ensure_topic(self) -> None:
        futures = self._admin.create_topics([NewTopic(self.topic, 1, -1)], request_timeout=15)
        try:
            futures[self.topic].result(timeout=20)
        except KafkaException as e:
            if e.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise

    def _group_empty(self) -> bool:
        group = self._admin.describe_consumer_groups([self.group], request_timeout=10)[self.group].result(timeout=15)
        return not group.members

    def _join(self) -> None:
        self._consumer = Consumer(self.conn | {
            "group.id": self.group, "group.instance.id": f"{self.group}.holder", "group.protocol": "classic",
            "session.timeout.ms": self.session_timeout_ms, "heartbeat.interval.ms": HEARTBEAT_INTERVAL_MS,
            "enable.auto.commit": False, "log_level": 0, "error_cb": self._on_error})
        self._consumer.subscribe([self.topic], on_assign=lambda c, ps: self._assigned.set(),
                                 on_lost=lambda c, ps: self._on_lost("its partition was lost"))
        self._thread = threading.Thread(target=self._keep, name="lease", daemon=True)
        self._thread.start()

    # --- holding it ------------------------------------------------------------------
    def _keep(self) -> None:
        consumer = self._consumer
        assert consumer is not None
        while not self._stop.is_set() and not self._lost.is_set():
            try:
                consumer.poll(0.2)  # serves the group's callbacks; the heartbeats run on librdkafka's own thread
            except KafkaException as e:
                self._on_lost(str(e))

    def _on_error(self, err: KafkaError) -> None:
        if err.code() == KafkaError._FENCED or err.code() == KafkaError.FENCED_INSTANCE_ID or err.fatal():
            self._on_lost(err.str())

    def _on_lost(self, why: str) -> None:
        if not self._lost.is_set():
            log.warning("lease %s lost: %s", self.group, why)
        self._lost.set()

    @property
    def joined(self) -> bool:
        """This driver took the lease (it may have lost it since)."""
        return self._consumer is not None

    @property
    def lost(self) -> threading.Event:
        """Set once another driver took the lease from this one."""
        return self._lost

    def check(self) -> None:
        """Raises ``LeaseLost`` once the lease was taken from this driver."""
        if self._lost.is_set():
            raise LeaseLost(f"the lease {self.group} was taken by another driver")

    def wait_assigned(self, timeout_s: float) -> bool:
        return self._assigned.wait(timeout_s)

    def close(self) -> None:
        """Leaves the lease to expire (a static member's close sends no LeaveGroup); the lock is released at once."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self._consumer is not None:
            try:
                self._consumer.close()
            except KafkaException:
                pass
        if self.lock is not None:
            self.lock.release()


class _EmptyGroupWatch:
    """Whether an empty group means the lease is free: once a holder was seen and is gone, or the group
    stayed empty for a whole session (nobody held it yet, and a driver starting beside this one had its
    time to join: two that find it empty at once would take it from each other)."""

    def __init__(self, session_s: float) -> None:
        self.session_s = session_s
        self._seen_holder = False
        self._empty_since: float | None = None

    def vacant(self, empty: bool) -> bool:
        now = time.monotonic()
        if not empty:
            self._seen_holder, self._empty_since = True, None
            return False
        if self._empty_since is None:
            self._empty_since = now
        return self._seen_holder or now - self._empty_since >= self.session_s
