"""Which records of a copy back's restored topics are history, pinned by offset.

A failback's copy back with ``restore_history`` writes the source's ``<target>.<topic>`` (what
the target held before it was wiped, kept on the source) back into ``<topic>`` on the target.
Once the applications write on the rebuilt target again and the re-protect copies them to the
source, those records land in ``<target>.<topic>`` too: restored once more, they would loop.
The history is what ``<target>.<topic>`` held when this flow first saw the partition (its old
owner was gone by then, so it no longer grows but by the re-protect). The bound is an offset,
not a time: a record copied again with its original timestamp (a re-protect that starts a
partition over) is no history either. Kept in a small file beside the checkpoint, so a
restarted process keeps the same bound.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger(__name__)


class HistoryEnds:
    """Per restored topic partition, the offset where its history ends (exclusive)."""

    def __init__(self, path: Path):
        self.path = path
        self._ends: dict[str, dict[str, int]] = {}
        if path.exists():
            try:
                self._ends = json.loads(path.read_text())
            except ValueError:
                log.warning("%s is unreadable; the history ends are pinned again at the current ends", path)

    def pin(self, partitions: dict[str, int], source_ends: Callable[[str, int], list[int]]) -> None:
        """Record the current end of every partition not pinned before (``partitions``: topic -> count)."""
        changed = False
        for topic, n in partitions.items():
            have = self._ends.setdefault(topic, {})
            if all(str(p) in have for p in range(n)):
                continue
            ends = source_ends(topic, n)
            for p in range(n):
                if str(p) not in have:
                    have[str(p)] = ends[p]
                    changed = True
        if changed:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text(json.dumps(self._ends, sort_keys=True))
            tmp.replace(self.path)

    def end(self, topic: str, partition: int) -> int | None:
        return self._ends.get(topic, {}).get(str(partition))

    def bounds(self) -> tuple[tuple[str, int, int], ...]:
        """(topic, partition, end) of every pinned partition, in order."""
        return tuple(sorted((t, int(p), e) for t, parts in self._ends.items() for p, e in parts.items()))
