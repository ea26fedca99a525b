"""Exact offset translation from the target's own records, each of which carries its source offset.

The bundled replicator's translation: it does not depend on the replicator being alive, only on
the target (``replicator.offset_index``).
"""

from __future__ import annotations

from collections.abc import Mapping

from confluent_kafka import KafkaException

from mirrordrill.harness.drill.replicators.errors import ReplicatorError
from mirrordrill.harness.drill.replicators.setup import ReplicationSetup
from mirrordrill.replicator.mm2_format import Checkpoint
from mirrordrill.replicator.offset_index import OffsetIndex

Partition = tuple[str, int]


def translate_on_target(setup: ReplicationSetup, group: str, target: str, wanted: Mapping[Partition, int],
                        checkpoints: Mapping[Partition, Checkpoint]) -> dict[Partition, int]:
    """For each remote partition, the first target position whose source offset is >= the committed one.

    The target is read from the newest checkpoint's position on (everything before it holds older
    source offsets), so failing over costs a short read, not the whole topic."""
    # A checkpoint (U -> D) says every position below D holds a source offset below U:
    # a commit at or past U translates to D or later.
    start_at = {key: checkpoints[key].downstream_offset for key, committed in wanted.items()
                if key in checkpoints and checkpoints[key].upstream_offset <= committed}
    index = OffsetIndex(setup.env.cluster(target).client_config())
    try:
        try:
            index.refresh(sorted(wanted), start_at=start_at)
        except (KafkaException, TimeoutError) as err:
            raise ReplicatorError(f"translating {group} onto {target}: {err}") from err
        return {key: index.translate(*key, committed, refresh=False) for key, committed in wanted.items()}
    finally:
        index.close()
