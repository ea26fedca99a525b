"""The task slots of the replicator's local Spark master: num_streams, capped at the cores in micro-batch mode."""

from __future__ import annotations

from mirrordrill.replicator.task_slots import capped_slots_note, spark_master_for
from tests.unit.replicator_config_helpers import props

BOTH_WAYS = "clusters = A, B\nA.bootstrap.servers = a:9092\nB.bootstrap.servers = b:9092\n"


def test_micro_batch_slots_are_num_streams_up_to_the_cores():
    one = props("A->B.enabled = true\nA->B.tasks.max = 1\n")
    four = props("A->B.enabled = true\nA->B.tasks.max = 4\n")
    assert spark_master_for(one, 0, cores=2) == "local[1]"
    assert spark_master_for(four, 0, cores=2) == "local[2]"
    assert spark_master_for(four, 0, cores=8) == "local[4]"
    assert "ask for 4 task slots (num_streams), 2 on 2 cores" in capped_slots_note(four, cores=2)
    assert capped_slots_note(four, cores=8) == "" and capped_slots_note(one, cores=2) == ""


def test_each_micro_batch_flow_keeps_a_slot_and_real_time_partitions_are_not_capped():
    two_flows = props("A->B.enabled = true\nB->A.enabled = true\nA->B.tasks.max = 4\nB->A.tasks.max = 4\n",
                      head=BOTH_WAYS)
    assert spark_master_for(two_flows, 0, cores=1) == "local[2]"
    realtime = props("A->B.enabled = true\nA->B.tasks.max = 4\nA->B.mirrordrill.mode = realtime\n")
    assert spark_master_for(realtime, 10, cores=2) == "local[10]"


def test_a_master_written_with_its_slots_is_taken_as_it_is():
    fixed = props("A->B.enabled = true\nA->B.tasks.max = 4\nmirrordrill.spark.master = local[4]\n")
    assert spark_master_for(fixed, 0, cores=2) == "local[4]" and capped_slots_note(fixed, cores=2) == ""
