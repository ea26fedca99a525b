"""A flow's query changes whole, and none after the process closed the flow (``replicator.query_gate``)."""

import threading
import time

from mirrordrill.replicator.query_gate import QueryGate


def test_a_pass_back_from_a_dead_cluster_after_the_stop_changes_nothing():
    gate = QueryGate()
    with gate.closing():
        pass
    with gate.change() as open_:
        assert open_ is False
    assert gate.closed


def test_the_stop_waits_for_a_query_start_under_way():
    gate, order = QueryGate(), []
    started = threading.Event()

    def start_query():
        with gate.change() as open_:
            assert open_
            started.set()
            time.sleep(0.3)  # Spark starting the query
            order.append("started")

    t = threading.Thread(target=start_query)
    t.start()
    started.wait(5)
    with gate.closing():
        order.append("stopped for good")
    t.join(5)
    assert order == ["started", "stopped for good"]


def test_changes_go_on_while_the_gate_is_open():
    gate = QueryGate()
    for _ in range(3):
        with gate.change() as open_:
            assert open_
    assert not gate.closed
