"""The replicator's control-loop schedules: fixed rate, as MM2's emitters run."""

from mirrordrill.replicator.schedule import Every, wait_until_due


def test_a_late_tick_does_not_push_the_next_run_back():
    every = Every(5.0, now=100.0)
    assert every.due(100.0)
    assert not every.due(104.9)
    assert every.due(105.8)  # the loop woke 0.8 s late
    assert every.next == 110.0  # still on the 5 s grid, not 110.8
    assert every.due(110.0)


def test_a_schedule_a_whole_period_behind_starts_afresh_instead_of_bursting():
    every = Every(5.0, now=0.0)
    assert every.due(0.0)
    assert every.due(17.0)  # a paused process: three periods missed
    assert not every.due(17.5)
    assert every.next == 22.0


def test_a_schedule_without_an_interval_is_never_due():
    off = Every(None, now=0.0)
    assert not off.due(1e9)


def test_the_loop_sleeps_until_the_earliest_schedule_is_due_within_its_bounds():
    checkpoints, heartbeats = Every(5.0, now=0.0), Every(1.0, now=0.0)
    checkpoints.due(0.0), heartbeats.due(0.0)
    assert wait_until_due([checkpoints, heartbeats], now=0.3, longest_s=1.0) == 0.7
    assert wait_until_due([checkpoints], now=0.3, longest_s=1.0) == 1.0  # never longer than the loop's own clock
    # due already (not consulted yet): a short nap, not a spin
    assert wait_until_due([heartbeats], now=1.2, longest_s=1.0) == 0.01
    assert wait_until_due([], now=0.0, longest_s=0.25) == 0.25
