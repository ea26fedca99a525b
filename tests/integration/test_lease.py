"""The node's lease (``replicator.lease``) against a real broker, with no lock file between the drivers:
as two drivers on different machines have it."""

from __future__ import annotations

import threading
import time
import uuid

import pytest

from mirrordrill.replicator.lease import SESSION_TIMEOUT_MS, Lease

pytestmark = pytest.mark.integration


class _TogetherLease(Lease):
    """Claims the empty lease the first time only once the other driver is about to too: two drivers
    that found the group empty at the same moment (as two processes started together do), made certain."""

    def __init__(self, conn: dict, group: str, together: threading.Barrier) -> None:
        super().__init__(conn, group)
        self._together: threading.Barrier | None = together

    def _won_claim(self, stop: threading.Event) -> bool:
        if self._together is not None:
            together, self._together = self._together, None
            together.wait(timeout=30)
        return super()._won_claim(stop)


class _Taker(threading.Thread):
    """A driver waiting for the lease, as a standby's ``stand_by`` does."""

    def __init__(self, lease: Lease) -> None:
        super().__init__(daemon=True)
        self.lease, self.stop, self.why, self.took_at = lease, threading.Event(), None, None

    def run(self) -> None:
        self.why = self.lease.acquire(self.stop)
        self.took_at = time.monotonic()


def _holding(t: _Taker) -> bool:
    return t.lease.joined and not t.lease.lost.is_set()


def test_two_drivers_that_join_an_empty_lease_together_never_both_hold_it(wan_env):
    conn = {"bootstrap.servers": wan_env.cluster("west").bootstrap}
    group = f"it-lease-alone-{uuid.uuid4().hex[:8]}"
    together = threading.Barrier(2)
    a, b = _Taker(_TogetherLease(conn, group, together)), _Taker(_TogetherLease(conn, group, together))
    try:
        a.start(), b.start()
        # both see the group empty for a whole session and claim it at once: the earlier claim
        # joins, the other stands by
        deadline, held_since = time.monotonic() + 60, None
        while time.monotonic() < deadline:
            holding = [t for t in (a, b) if t.took_at is not None and _holding(t)]
            assert len(holding) <= 1, [t.why for t in (a, b)]
            held_since = (held_since or time.monotonic()) if holding else None
            if held_since is not None and time.monotonic() - held_since > 12:  # two sessions, one holder
                break
            time.sleep(0.2)
        assert held_since is not None and time.monotonic() - held_since > 12, "no driver kept the lease"
        (holder,) = [t for t in (a, b) if _holding(t)]
        assert "empty" in holder.why or "beats stopped" in holder.why
    finally:
        for t in (a, b):
            t.stop.set()
            t.join(timeout=10)
            t.lease.close()


def test_the_standby_takes_a_lease_whose_holder_went_after_a_session_of_still_beats(wan_env):
    conn = {"bootstrap.servers": wan_env.cluster("west").bootstrap}
    group = f"it-lease-alone-{uuid.uuid4().hex[:8]}"
    holder = _Taker(Lease(conn, group))
    holder.start()
    holder.join(timeout=30)
    assert holder.took_at is not None and "empty" in holder.why
    standby = _Taker(Lease(conn, group))
    try:
        standby.start()
        time.sleep(2 * SESSION_TIMEOUT_MS / 1000)  # two sessions: the holder beats, the standby waits
        assert standby.took_at is None and _holding(holder)
        gone = time.monotonic()
        holder.lease.close()  # its beats stop (a static member's close leaves no LeaveGroup)
        standby.join(timeout=30)
        assert standby.took_at is not None and "beats stopped" in standby.why
        assert standby.took_at - gone >= SESSION_TIMEOUT_MS / 1000 - 0.5  # not before a session of still beats (less a poll)
    finally:
        for t in (holder, standby):
            t.stop.set()
            t.join(timeout=10)
            t.lease.close()
