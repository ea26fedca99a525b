"""Waiting, before a planned move, until MM2's checkpoints carry a group's commits and translate them exactly.

MM2 checkpoints a group only after it finds it (``refresh.groups.interval.seconds``) and then every
``emit.checkpoints.interval.seconds``; a partition read to its end is translated exactly only once
the delayed offset sync of its last record reached the checkpoint task (see
``MirrorMaker2Replicator.await_checkpoints``). The loop is kept apart from the adapter so it reads
its inputs through two callables: the checkpoints as they are now, and the remote ends.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence

from confluent_kafka import KafkaException

from mirrordrill.harness.drill.replicators.interface import CheckpointWait
from mirrordrill.replicator.mm2_format import Checkpoint

Partition = tuple[str, int]


def _inexact(carried: Mapping[Partition, Checkpoint], at_end: Sequence[Partition],
             exact_ends: Callable[[list[Partition]], dict[Partition, int]]) -> list[Partition]:
    """Partitions read to their end whose checkpoint maps the commit below the remote end."""
    try:
        exact = exact_ends(list(at_end))
        return sorted(k for k in exact if carried[k].downstream_offset < exact[k])
    except (KafkaException, TimeoutError):
        return sorted(at_end)  # the target did not answer this pass: ask again


def await_carried_checkpoints(wanted: Mapping[Partition, int], at_end: Sequence[Partition], timeout_s: float,
                              read: Callable[[], list[Checkpoint]],
                              exact_ends: Callable[[list[Partition]], dict[Partition, int]]) -> CheckpointWait:
    """Wait until a checkpoint of each remote partition in ``wanted`` carries its commit, and those in
    ``at_end`` (read to the source's end) translate to one past the remote partition's newest record."""
    started, carried_after = time.monotonic(), None
    while True:
        carried = {(cp.topic, cp.partition): cp for cp in read()}
        uncarried = sorted(k for k, offset in wanted.items() if k not in carried or carried[k].upstream_offset < offset)
        inexact: list[Partition] = []
        if not uncarried:
            carried_after = time.monotonic() - started if carried_after is None else carried_after
            inexact = _inexact(carried, at_end, exact_ends)
        waited = time.monotonic() - started
        if not uncarried and not inexact:
            return CheckpointWait(True, f"checkpoints carry the commits of {len(wanted)} partition(s) after "
                                        f"{carried_after:.1f}s, translated exactly ({len(at_end)} read to the "
                                        f"end) after {waited:.1f}s")
        if waited >= timeout_s:
            behind = uncarried or inexact
            what = "behind the commits" if uncarried else "carrying the commits one past an older offset sync"
            return CheckpointWait(False, f"checkpoints of {len(behind)} of {len(wanted)} partition(s) still "
                                         f"{what} after {timeout_s:.0f}s (e.g. {behind[0][0]}-{behind[0][1]})")
        time.sleep(1.0)
