"""The ``with`` block of something started and stopped as a whole (a lab, a replicator)."""

from __future__ import annotations

from typing import Self


class StartedInWith:
    """``with thing:`` starts it and stops it on every exit path, a start that failed halfway
    included (what it did start must not outlive the block). Subclasses define ``start`` and ``stop``."""

    def start(self) -> object:
        raise NotImplementedError

    def stop(self) -> object:  # what a subclass's stop reports (a lab: its problems) is its callers' business
        raise NotImplementedError

    def __enter__(self) -> Self:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
