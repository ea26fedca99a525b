"""Each flow's control plane on its own thread (``replicator.control_threads``), with stand-in flows."""

import threading
import time

from mirrordrill.replicator.control_threads import ControlThreads
from mirrordrill.replicator.schedule import Every


class StandInFlow:
    def __init__(self, name: str, tick_s: float = 0.0, fail: bool = False):
        self.name = name
        self.tick_s = tick_s
        self.fail = fail
        self.ticks = 0
        self.lags = 0
        self.threads: set[str] = set()
        self.every = Every(0.02)

    def tick(self, spark, now):
        self.threads.add(threading.current_thread().name)
        if self.fail:
            raise RuntimeError(f"{self.name} broke")
        self.ticks += 1
        time.sleep(self.tick_s)

    def schedules(self):
        return [self.every]

    def lag(self):
        self.lags += 1
        return {("t", 0): self.lags}


def run_for(flows, seconds):
    control = ControlThreads(flows, spark=None, longest_wait_s=lambda: 0.02).start()
    time.sleep(seconds)
    control.stop(grace_s=5)
    return control


def test_a_slow_flow_does_not_hold_up_the_others():
    # a far flow's pass (round trips over a slow WAN) took seconds, and every flow waited behind it:
    # here the far flow's first pass lasts until the near flow has ticked five times
    near = StandInFlow("c->near")
    released = threading.Event()

    class Far(StandInFlow):
        def tick(self, spark, now):
            super().tick(spark, now)
            released.wait(10)

    far = Far("c->far")
    control = ControlThreads([far, near], spark=None, longest_wait_s=lambda: 0.02).start()
    deadline = time.monotonic() + 10
    while near.ticks < 5 and time.monotonic() < deadline:
        time.sleep(0.01)
    ticked_meanwhile = near.ticks
    released.set()
    control.stop(grace_s=5)
    assert far.ticks == 1 and ticked_meanwhile >= 5


def test_each_flow_ticks_on_a_thread_of_its_own():
    a, b = StandInFlow("a->b"), StandInFlow("a->c")
    run_for([a, b], 0.1)
    assert a.threads == {"control a->b"} and b.threads == {"control a->c"}


def test_the_lag_probe_runs_beside_the_ticks_and_keeps_each_flows_latest():
    a = StandInFlow("a->b")
    control = run_for([a], 0.1)
    assert a.lags >= 1 and control.lag["a->b"] == {("t", 0): a.lags}
    assert "control a->b" in a.threads and not any("lag" in t for t in a.threads)


def test_an_unexpected_error_in_one_flow_ends_every_loop_and_is_kept():
    broken, fine = StandInFlow("a->b", fail=True), StandInFlow("a->c")
    control = ControlThreads([broken, fine], spark=None, longest_wait_s=lambda: 0.02).start()
    deadline = time.monotonic() + 5
    while not control.failed and time.monotonic() < deadline:
        time.sleep(0.01)
    assert isinstance(control.failure, RuntimeError) and "a->b broke" in str(control.failure)
    ticks = fine.ticks
    control.stop(grace_s=5)
    time.sleep(0.1)
    assert fine.ticks <= ticks + 1  # its loop ended too


def test_stop_waits_for_a_short_pass_under_way():
    slow = StandInFlow("a->b", tick_s=0.5)
    control = ControlThreads([slow], spark=None, longest_wait_s=lambda: 0.02).start()
    time.sleep(0.05)
    assert control.stop(grace_s=5) is True
    assert slow.ticks == 1
    assert not any(t.is_alive() for t in control._threads)


def test_stop_does_not_wait_out_a_round_trip_to_a_dead_cluster():
    # a topic refresh against a killed primary blocks for its whole 30 s timeout: the process's stop
    # went on only when the harness's grace ran out and killed it
    released = threading.Event()

    class Stuck(StandInFlow):
        def tick(self, spark, now):
            super().tick(spark, now)
            released.wait(30)

    stuck = Stuck("dead->b")
    control = ControlThreads([stuck], spark=None, longest_wait_s=lambda: 0.02).start()
    time.sleep(0.05)
    began = time.monotonic()
    assert control.stop(grace_s=0.3) is False  # the caller leaves the flow's clients open
    took = time.monotonic() - began
    released.set()
    assert took < 2, took
