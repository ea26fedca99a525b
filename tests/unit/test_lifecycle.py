"""A lab or a replicator used in a ``with`` block leaves nothing running, even when its start fails halfway."""

from __future__ import annotations

import pytest

from mirrordrill.primitives.lifecycle import StartedInWith


class _Lab(StartedInWith):
    def __init__(self, fail: bool) -> None:
        self.fail, self.calls = fail, []

    def start(self) -> None:
        self.calls.append("start")
        if self.fail:
            raise KeyboardInterrupt  # Ctrl-C in the middle of a start: a BaseException, not an Exception

    def stop(self) -> None:
        self.calls.append("stop")


def test_a_start_that_fails_halfway_is_stopped_and_the_error_kept():
    lab = _Lab(fail=True)
    with pytest.raises(KeyboardInterrupt):
        with lab:
            pytest.fail("the block must not run")
    assert lab.calls == ["start", "stop"]


def test_the_block_ends_with_one_stop_on_success_and_on_error():
    lab = _Lab(fail=False)
    with lab as entered:
        assert entered is lab
    assert lab.calls == ["start", "stop"]
    lab = _Lab(fail=False)
    with pytest.raises(ValueError), lab:
        raise ValueError("a step failed")
    assert lab.calls == ["start", "stop"]
