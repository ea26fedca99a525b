"""Exact offset translation from the target's own records, each of which carries its source offset.

The bundled replicator's translation: it does not depend on the replicator being alive, only on
the target (``replicator.offset_index``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from confluent_kafka import KafkaException

from mirrordrill.harness.drill.replicators.errors import ReplicatorError
from mirrordrill.harness.drill.replicators.mm2_topics import latest_checkpoints
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


Commits = Callable[[str, str, str, Callable[[str], bool]], dict[Partition, int]]


def translate_group(setup: ReplicationSetup, source_commits: Commits, group: str, source: str, target: str,
                    source_lost: bool) -> dict[Partition, int]:
    """``group``'s committed positions on ``source``, translated onto ``target`` exactly.

    The commits come from the source when it answers (``source_commits``), else from the newest
    checkpoints on the target."""
    flow = setup.flow(source, target)
    checkpoints = latest_checkpoints(setup, group, source, target)
    selector = setup.flow_config(flow).topic_selector()
    commits = None
    if not source_lost:
        try:
            commits = source_commits(group, source, target, selector.should_checkpoint_topic)
        except (KafkaException, TimeoutError):
            pass  # unreachable: as good as lost
    if commits is None:
        wanted = {key: cp.upstream_offset for key, cp in checkpoints.items()}
    else:
        # the selector names each remote topic (a failback restoring history writes "B.t" back as "t")
        wanted = {(selector.remote_topic(topic), partition): committed
                  for (topic, partition), committed in commits.items() if selector.should_checkpoint_topic(topic)}
    return translate_on_target(setup, group, target, wanted, checkpoints)
