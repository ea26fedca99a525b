"""The heartbeat round trip of the warm-up runs once per replicator process (``replicator.shared_warm_up``)."""

import time

from mirrordrill.replicator.shared_warm_up import SharedWarmUp


def test_the_flow_with_the_quickest_first_sync_runs_the_round_trip():
    shared = SharedWarmUp.quickest({"c->far": 1.9, "c->near": 0.4, "c->mid": 0.8})
    assert shared.owner == "c->near"
    assert shared.runs_round_trip("c->near")
    assert not shared.runs_round_trip("c->far") and not shared.runs_round_trip("c->mid")


def test_equal_syncs_choose_the_same_flow_every_time():
    assert SharedWarmUp.quickest({"b": 1.0, "a": 1.0}).owner == "a"


def test_other_flows_wait_for_the_round_trip_to_end():
    shared = SharedWarmUp("c->near")
    assert not shared.ready()
    shared.ended()
    assert shared.ready()


def test_with_no_flow_chosen_each_runs_its_own_and_waits_for_no_other():
    # no flow had topics at its first sync (they come later): each warms up as if alone
    shared = SharedWarmUp.quickest({})
    assert shared.owner is None and shared.ready()
    assert shared.runs_round_trip("a->b") and shared.runs_round_trip("a->c")


def test_a_round_trip_that_never_comes_is_waited_for_only_so_long():
    # the chosen flow's query may never start (its target down): the others go live without it
    shared = SharedWarmUp("c->down", patience_s=0.05)
    assert not shared.ready()
    time.sleep(0.06)
    assert shared.ready()
