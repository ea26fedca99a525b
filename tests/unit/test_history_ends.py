"""A copy back's history bound: pinned by offset the first time a partition is seen, kept across restarts."""

from __future__ import annotations

from pathlib import Path

from mirrordrill.replicator.history import HistoryEnds


def ends_now(values: dict[str, list[int]]):
    return lambda topic, n: values[topic][:n]


def test_the_first_sight_of_a_partition_pins_its_end(tmp_path: Path) -> None:
    history = HistoryEnds(tmp_path / "history-ends.json")
    history.pin({"primary.orders": 2}, ends_now({"primary.orders": [400, 380]}))
    assert history.bounds() == (("primary.orders", 0, 400), ("primary.orders", 1, 380))


def test_later_records_do_not_move_a_pinned_end_even_after_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "history-ends.json"
    HistoryEnds(path).pin({"primary.orders": 2}, ends_now({"primary.orders": [400, 380]}))
    # the re-protect has copied new records into primary.orders since; a restarted copy back keeps the bound
    restarted = HistoryEnds(path)
    restarted.pin({"primary.orders": 2}, ends_now({"primary.orders": [450, 420]}))
    assert restarted.end("primary.orders", 0) == 400 and restarted.end("primary.orders", 1) == 380


def test_a_partition_or_topic_seen_later_is_pinned_then(tmp_path: Path) -> None:
    history = HistoryEnds(tmp_path / "history-ends.json")
    history.pin({"primary.orders": 1}, ends_now({"primary.orders": [400]}))
    history.pin({"primary.orders": 2, "primary.audit": 1}, ends_now({"primary.orders": [999, 7], "primary.audit": [3]}))
    assert history.bounds() == (("primary.audit", 0, 3), ("primary.orders", 0, 400), ("primary.orders", 1, 7))
    assert history.end("primary.other", 0) is None


def test_an_unreadable_file_pins_again(tmp_path: Path) -> None:
    path = tmp_path / "history-ends.json"
    path.write_text("{not json")
    history = HistoryEnds(path)
    history.pin({"primary.orders": 1}, ends_now({"primary.orders": [5]}))
    assert history.bounds() == (("primary.orders", 0, 5),)
