"""How many task slots a local Spark master (``local[*]``) gets: the flows' num_streams and partitions."""

from __future__ import annotations

import os

from mirrordrill.replicator.config.settings import ReplicatorConfig


def spark_master_for(config: ReplicatorConfig, partitions_needed: int, cores: int | None = None) -> str:
    """``local[*]`` becomes enough task slots: num_streams per micro-batch flow, at most the machine's cores
    (at least one per such flow), and one per partition in real time.

    A micro-batch task copies its partition's records on a core of its own while it runs; more
    slots than cores only make the tasks contend (four slots on two cores carried less than one
    or two;
    see docs/measurements/behind-the-code.md#replicator-task-slots-py). A real-time task holds its slot
    for the whole batch, so real-time slots are not capped. A master written as ``local[N]`` is
    taken as it is."""
    if config.spark_master.strip() != "local[*]":
        return config.spark_master
    _, granted = microbatch_slots(config, cores)
    return f"local[{max(1, granted + partitions_needed)}]"


def microbatch_slots(config: ReplicatorConfig, cores: int | None = None) -> tuple[int, int]:
    """The micro-batch task slots the flows ask for (their num_streams) and those ``local[*]`` gives them."""
    microbatch = [f.tasks_max for f in config.enabled_flows() if f.mode == "microbatch"]
    cap = max(cores or os.cpu_count() or 1, len(microbatch))
    return sum(microbatch), min(sum(microbatch), cap)


def capped_slots_note(config: ReplicatorConfig, cores: int | None = None) -> str:
    """For the log: "" unless ``local[*]`` gave the micro-batch flows fewer slots than their num_streams."""
    asked, granted = microbatch_slots(config, cores)
    if config.spark_master.strip() != "local[*]" or granted == asked:
        return ""
    return (f"; the micro-batch flows ask for {asked} task slots (num_streams), {granted} on "
            f"{cores or os.cpu_count()} cores: more would only contend")
