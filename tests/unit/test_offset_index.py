"""Exact offset translation over the prefix maxima of a target partition (pure logic)."""

from mirrordrill.replicator.offset_index import PartitionIndex


def index_of(source_offsets: list[int], start: int = 0) -> PartitionIndex:
    """A partition whose positions start..start+n-1 hold these source offsets."""
    idx = PartitionIndex("east.orders", 0)
    idx.skip_to(start)
    for position, src in enumerate(source_offsets, start):
        idx.observe(position, src)
    return idx


def test_steady_replication_translates_one_to_one_and_stays_one_run():
    idx = index_of(list(range(100)))
    assert [idx.translate(c) for c in (0, 1, 57, 99)] == [0, 1, 57, 99]
    assert idx.translate(100) == 100  # everything processed: the end
    assert len(idx.runs) == 1


def test_replayed_records_never_make_a_group_skip():
    # positions 0..4 hold 0..4; a restart replays 3, 4, then 5, 6 follow
    idx = index_of([0, 1, 2, 3, 4, 3, 4, 5, 6])
    assert idx.translate(4) == 4   # first copy of source offset 4
    assert idx.translate(5) == 7   # the first position holding 5, after the replay
    assert idx.translate(7) == 9


def test_reading_from_a_checkpoint_gives_the_same_answers_as_reading_everything():
    offsets = [0, 1, 2, 3, 4, 3, 4, 5, 6, 7, 8, 9]
    whole = index_of(offsets)
    # a checkpoint 5 -> 7: every position below 7 holds a source offset below 5
    tail = index_of(offsets[7:], start=7)
    for committed in range(5, 11):
        assert tail.translate(committed) == whole.translate(committed), committed


def test_offsets_missing_on_the_target_translate_to_the_next_record():
    # source offsets 3..5 were compacted away or never copied
    idx = index_of([0, 1, 2, 6, 7])
    assert idx.translate(4) == 3
