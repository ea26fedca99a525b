"""Who of a replicator node's two drivers (the active and its standby) replicates: a lease on the target.

The lease is the membership of one static member, ``<group>.holder``, in a classic consumer
group on the flows' target cluster: Kafka's group coordinator already does what a lease needs
(a session the member keeps alive with heartbeats, expiry when they stop, and fencing of an
older member when a newer one joins under the same instance id, KIP-345), as Connect uses group
membership for its workers. The holder commits a rising count to the group every heartbeat
interval ("beats"); a standby takes the lease when they stopped for ``session_timeout_ms`` (the
holder died, or was paused), or at once when it holds the node's lock file (``LocalLock``): on
one machine the kernel releases the lock the moment the holder dies. Either way it joins under the
holder's instance id while the silent member still exists, so the coordinator replaces that
member, and a paused holder that resumes is refused (FENCED_INSTANCE_ID). The holder's own session
with the coordinator is therefore long (``HOLDER_SESSION_MS``): had its membership expired, or its
client's own session run out during the pause, the resumed client would join again under the same
instance id and replace the new holder instead, as KIP-345 favours the newest join. A holder
learns it lost the lease by looking: the group's member under the instance id is not its own.
An empty group (nobody held it yet) is taken after a session.

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
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, KafkaError, KafkaException, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

log = logging.getLogger("replicator")

# How long the holder's beats must stand still before a standby takes the lease (the longest a standby
# on another machine waits after its holder stops): six beats. The lease's own clock, not a Kafka
# session, so not bound by the brokers' group.min.session.timeout.ms (6 s by default), which is the
# lowest MirrorMaker 2's Connect workers can detect a lost node in.
SESSION_TIMEOUT_MS = 3000
HEARTBEAT_INTERVAL_MS = 500
# The holder's session with the group coordinator, and its client's poll interval: a pause shorter
# than this ends in FENCED_INSTANCE_ID, not in a join that replaces the new holder (see above). Five
# minutes: under the brokers' group.max.session.timeout.ms (30 minutes by default).
HOLDER_SESSION_MS = 300_000
# Two drivers that find the lease's group empty together each append a claim to the lease's topic
# and wait this long; the earliest claim appended within it of each one's own wins (``Lease._won_claim``).
CLAIM_WAIT_S = 1.0
# how many records back a claimer reads for claims before its own
CLAIM_LOOKBACK = 100
# how long a driver that joined waits for the group to assign it the lease's partition (``Lease._confirmed``)
ASSIGN_TIMEOUT_S = 30.0
# errors of a look at the group that say nothing about who holds it: its coordinator not there yet
# (a new group, a moving leader) or the target unreachable for a moment (admin results carry no
# retriable flag)
_LOOK_AGAIN = (KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_NOT_AVAILABLE, KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
               KafkaError._TIMED_OUT, KafkaError._TRANSPORT)
LOCK_FREED = "the node's lock is free (its holder is gone)"
# how often a standby with the node's lock looks at it between its looks at the group: a system call,
# not a round trip, so a killed holder is seen within this
LOCK_LOOK_S = 0.02
# librdkafka's codes for a member another one replaced
_FENCED = (KafkaError._FENCED, KafkaError.FENCED_INSTANCE_ID)


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

    def record_holder(self) -> None:
        """Write this process's id into the file: the lease's holder on this machine, with the lock or not.

        A driver that took the lease from a paused one (its beats stopped) while that one held the
        lock has the lock only once that one exits; until then a standby started meanwhile could get the freed lock
        first, and must not read that as "the holder is gone". In place, not renamed: the lock is
        on the file's inode."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            os.ftruncate(fd, 0)
            os.write(fd, str(os.getpid()).encode())
        finally:
            os.close(fd)

    def holder_alive(self) -> bool:
        """Whether the process the file names as the lease's holder (``record_holder``) still runs here."""
        try:
            text = self.path.read_text().strip()
            pid = int(text) if text else 0
        except (OSError, ValueError):
            return True  # a holder writing its id this very moment: look again
        if pid <= 0 or pid == os.getpid():
            return False
        try:
            os.kill(pid, 0)  # a paused (SIGSTOP) holder runs too: the lease's group decides about it
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True

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
        self._beats = 0  # the next count this driver commits as holder
        self.held_elsewhere = False  # the last look (``acquire``) found another driver in the lease's group

    # --- taking it -------------------------------------------------------------------
    def acquire(self, stop: threading.Event, idle: Callable[[], None] = lambda: None, poll_s: float = 0.2) -> str | None:
        """Wait until this driver may take the lease, then join as its holder; why it took it, or None if stopped.

        ``idle`` runs between looks (the process writes its status there)."""
        self._ensure_topic()
        watch = _HolderWatch(self.session_timeout_ms / 1000)
        if self.first_only:
            if self._group_empty() and (self.lock is None or self.lock.try_acquire()):
                self._join()
                return "nobody held it yet (planted fault: a standby never takes over)"
            while not stop.is_set():
                idle()
                stop.wait(poll_s)
            return None
        lock_freed = False
        while not stop.is_set():
            try:
                vacancy = LOCK_FREED if lock_freed else self._vacancy(watch, stop)
            except KafkaException as e:
                if not (e.args[0].retriable() or e.args[0].code() in _LOOK_AGAIN):
                    raise
                vacancy = None  # the group's coordinator not there yet (a new group, a moving leader): look again
            if vacancy is None:
                idle()
                lock_freed = self._wait_between_looks(stop, poll_s)
                continue
            self._join()
            # the node's lock rules out a second driver joining now (it is on this machine, and the lock's
            # holder is gone): no wait for the assignment on a kill's path
            if vacancy == LOCK_FREED or self._confirmed(stop):
                return vacancy
            log.info("lease %s: another driver joined at the same moment and holds it; standing by again", self.group)
            self._abandon()
            watch = _HolderWatch(self.session_timeout_ms / 1000)
        return None

    def _wait_between_looks(self, stop: threading.Event, poll_s: float) -> bool:
        """Wait ``poll_s`` for the next look at the group; with the node's lock, look at the lock meanwhile: True
        (the lock held now) as soon as its holder is gone (``_lock_freed_by_holder``)."""
        if self.lock is None:
            stop.wait(poll_s)
            return False
        deadline = time.monotonic() + poll_s
        while not stop.wait(LOCK_LOOK_S):
            if self._lock_freed_by_holder():
                return True
            if time.monotonic() >= deadline:
                break
        return False

    def _vacancy(self, watch: _HolderWatch, stop: threading.Event) -> str | None:
        """Why this driver may take the lease now, or None."""
        if self._lock_freed_by_holder():
            return LOCK_FREED
        empty = self._group_empty()
        self.held_elsewhere = not empty
        vacancy = watch.vacant(empty, self._holder_beats())
        if vacancy is None:
            return None
        if self.lock is not None and vacancy.startswith("its holder"):
            return vacancy + "; the lock is still held by a paused or stuck holder"
        if vacancy.startswith("the lease's group is empty"):
            if self.lock is not None:
                # on one machine the lock decides: its live holder is about to join (a dead one's lock
                # is ``_lock_freed_by_holder``'s); a standby whose warm-up ended first must not join first
                return None
            if not self._won_claim(stop):
                return None  # another driver claimed it first
        return vacancy

    def _won_claim(self, stop: threading.Event) -> bool:
        """Whether this driver, finding the group empty, is the one to join it.

        Two drivers started together (no lock file between them, as on two machines) see it empty for
        the same session, and two static joins under one instance id at once leave the coordinator
        replacing each with the other. So each appends a claim to the lease's topic (one partition: one
        order for all), waits ``CLAIM_WAIT_S``, and reads the claims appended since ``CLAIM_WAIT_S``
        before its own (the topic keeps the broker's append time, so no machine's clock counts): the
        earliest wins, everybody reading the same. A claim from a driver that died before joining is
        older than the window of the next claimer's, so it blocks nobody for long."""
        producer = Producer(self.conn | {"acks": "all", "log_level": 0})
        appended: list[Message] = []
        producer.produce(self.topic, value=uuid.uuid4().hex.encode(), key=b"claim", partition=0,
                         on_delivery=lambda err, msg: appended.append(msg) if err is None else None)
        producer.flush(15)
        if not appended:
            return False  # not appended: look again
        mine_offset, (_, mine_ms) = appended[0].offset() or 0, appended[0].timestamp()
        stop.wait(CLAIM_WAIT_S)  # claims of others deciding at the same moment are appended by then
        claims = self._claims_since(max(0, mine_offset - CLAIM_LOOKBACK))
        first = min((offset for offset, ms in claims if ms >= mine_ms - CLAIM_WAIT_S * 1000), default=None)
        return first == mine_offset and self._group_empty()  # and nobody joined meanwhile

    def _claims_since(self, offset: int) -> list[tuple[int, int]]:
        """The lease topic's claims from ``offset`` to its end: (offset, append time ms)."""
        reader = Consumer(self.conn | {"group.id": f"{self.group}.claims", "enable.auto.commit": False,
                                       "enable.partition.eof": True, "log_level": 0})
        claims: list[tuple[int, int]] = []
        reader.assign([TopicPartition(self.topic, 0, offset)])
        deadline = time.monotonic() + 15
        try:
            while time.monotonic() < deadline:
                m = reader.poll(0.5)
                if m is None:
                    continue
                if (err := m.error()) is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        break
                    continue
                if m.key() == b"claim" and m.offset() is not None:
                    claims.append((m.offset() or 0, m.timestamp()[1]))
        finally:
            reader.close()
        return claims

    def _confirmed(self, stop: threading.Event) -> bool:
        """This driver's join made it the holder: its partition was assigned (within ``ASSIGN_TIMEOUT_S``)
        and the group's member under the holder's instance id is its own. Two that joined at once: the later
        join replaced the earlier (KIP-345), whose client learns it only as a fatal error that reaches
        neither ``error_cb`` nor ``poll`` (``_keep``), so it is looked for here."""
        deadline = time.monotonic() + ASSIGN_TIMEOUT_S
        while not self._assigned.wait(0.1):
            if stop.is_set() or self._lost.is_set() or time.monotonic() >= deadline:
                return False
        consumer = self._consumer
        if consumer is None or self._lost.is_set() or not consumer.memberid():
            return False
        try:
            return self._holder_member() == consumer.memberid()
        except (KafkaException, TimeoutError):
            return False

    def _abandon(self) -> None:
        """Undo a join that did not make this driver the holder (``_confirmed``); back to standing by."""
        self.close()
        self._consumer, self._thread = None, None
        self._stop, self._lost, self._assigned = threading.Event(), threading.Event(), threading.Event()

    def _lock_freed_by_holder(self) -> bool:
        """This driver got the node's lock, and the holder that last took the lease here is gone.

        The lock alone is not enough: a holder that took the lease through the group has the lock only
        from its next look after the paused driver that held it exits (``record_holder``)."""
        if self.lock is None or not self.lock.try_acquire():
            return False
        if self.lock.holder_alive():
            self.lock.release()  # the holder takes it at its next look (``_keep``)
            return False
        return True

    def _ensure_topic(self) -> None:
        # the broker's append time on its records: the claims (``_won_claim``) compare the broker's clock only
        futures = self._admin.create_topics([NewTopic(self.topic, 1, -1, config={
            "message.timestamp.type": "LogAppendTime"})], request_timeout=15)
        try:
            futures[self.topic].result(timeout=20)
        except KafkaException as e:
            if e.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise

    def _group_empty(self) -> bool:
        group = self._admin.describe_consumer_groups([self.group], request_timeout=10)[self.group].result(timeout=15)
        return not group.members

    def _holder_beats(self) -> int | None:
        """The holder's count of beats committed to the group (None before any)."""
        request = [ConsumerGroupTopicPartitions(self.group, [TopicPartition(self.topic, 0)])]
        result = self._admin.list_consumer_group_offsets(request, request_timeout=10)[self.group].result(timeout=15)
        offset = result.topic_partitions[0].offset
        return offset if offset >= 0 else None

    def _join(self) -> None:
        if self.lock is not None:
            self.lock.record_holder()  # before joining: a standby that gets the lock meanwhile reads it
        self._beats = (self._holder_beats() or 0) + 1  # rising past the last holder's
        self._consumer = Consumer(self.conn | {
            "group.id": self.group, "group.instance.id": f"{self.group}.holder", "group.protocol": "classic",
            "session.timeout.ms": HOLDER_SESSION_MS, "max.poll.interval.ms": HOLDER_SESSION_MS,
            "heartbeat.interval.ms": HEARTBEAT_INTERVAL_MS,
            "enable.auto.commit": False, "log_level": 0, "error_cb": self._on_error})
        self._consumer.subscribe([self.topic], on_assign=lambda c, ps: self._assigned.set(),
                                 on_lost=lambda c, ps: self._on_lost("its partition was lost"))
        self._thread = threading.Thread(target=self._keep, name="lease", daemon=True)
        self._thread.start()

    # --- holding it ------------------------------------------------------------------
    def _keep(self) -> None:
        consumer = self._consumer
        assert consumer is not None
        next_beat = 0.0
        while not self._stop.is_set() and not self._lost.is_set():
            if self.lock is not None and not self.lock.held:
                self.lock.try_acquire()  # taken through the group: the lock once the paused holder lets it go
            try:
                if time.monotonic() >= next_beat and self._assigned.is_set():
                    if (other := self._other_holder(consumer)) is not None:
                        self._on_lost(f"the group's holder is member {other} now")
                        break
                    consumer.commit(offsets=[TopicPartition(self.topic, 0, self._beats)], asynchronous=True)
                    self._beats += 1
                    next_beat = time.monotonic() + HEARTBEAT_INTERVAL_MS / 1000
                # serves the group's callbacks; the group's heartbeats run on librdkafka's own thread
                msg = consumer.poll(0.1)
                if msg is not None and (err := msg.error()) is not None and (err.fatal() or err.code() in _FENCED):
                    self._on_lost(err.str())
            except KafkaException as e:
                self._on_lost(str(e))

    def _other_holder(self, consumer: Consumer) -> str | None:
        """The member id under the holder's instance id when it is not this driver's (None: it is, or unknown)."""
        mine = consumer.memberid()
        try:
            theirs = self._holder_member()
        except (KafkaException, TimeoutError):
            return None  # the target unreachable for a moment says nothing about who holds it
        return theirs if mine and theirs and theirs != mine else None

    def _holder_member(self) -> str | None:
        """The group's member id under the holder's instance id (None: no such member)."""
        group = self._admin.describe_consumer_groups([self.group], request_timeout=5)[self.group].result(timeout=10)
        return next((m.member_id for m in group.members if m.group_instance_id == f"{self.group}.holder"), None)

    def _on_error(self, err: KafkaError) -> None:
        if err.code() in _FENCED or err.fatal():
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


class _HolderWatch:
    """Whether the lease is free: the holder's beats (``Lease._holder_beats``) stood still for a whole
    session by this standby's clock (any clock skew between machines drops out), or the group is empty
    once a holder was seen, or stayed empty for a whole session (nobody held it yet, and a driver
    starting beside this one had its time to join: two that find it empty at once would take it from
    each other)."""

    def __init__(self, session_s: float) -> None:
        self.session_s = session_s
        self._seen_holder = False
        self._empty_since: float | None = None
        self._beats: int | None = None
        self._beats_moved: float | None = None

    def vacant(self, empty: bool, beats: int | None = None) -> str | None:
        """Why the lease is free now, or None."""
        now = time.monotonic()
        if beats is not None and beats != self._beats:
            self._beats, self._beats_moved = beats, now
        if not empty:
            self._seen_holder, self._empty_since = True, None
            if self._beats_moved is not None and now - self._beats_moved >= self.session_s:
                return f"its holder's beats stopped {now - self._beats_moved:.1f}s ago (paused, stuck or gone)"
            return None
        if self._empty_since is None:
            self._empty_since = now
        if self._seen_holder or now - self._empty_since >= self.session_s:
            return "the lease's group is empty (its holder's session expired, or none ever held it)"
        return None
