"""The drill's clock: zero at the load's start, steps at their ``at`` on it, the load's full duration."""

from __future__ import annotations

from types import SimpleNamespace

from mirrordrill.harness.drill.load_clock import LoadClock, ProducingSince, load_clock
from mirrordrill.harness.drill.steps import wait_for_start


def test_zero_is_the_first_producer_not_the_launch():
    clock = load_clock([ProducingSince(104.0, 5_000), ProducingSince(103.2, 4_200)], 60.0,
                       now=ProducingSince(105.0, 6_000))
    assert clock == LoadClock(zero=103.2, zero_ms=4_200, until_s=0.8 + 60.0)


def test_a_producer_that_started_later_still_runs_its_full_duration():
    clock = load_clock([ProducingSince(10.0, 0), ProducingSince(13.0, 3_000)], 30.0, now=ProducingSince(13.1, 3_100))
    # the second producer ends 3 s + 30 s after zero: the engine must not stop it at 30 s
    assert clock.until_s == 33.0
    assert clock.offset_s(13.0) == 3.0


def test_without_producers_zero_is_now():
    clock = load_clock([], 45.0, now=ProducingSince(7.5, 1234))
    assert (clock.zero, clock.zero_ms, clock.until_s) == (7.5, 1234, 45.0)


class _FakeTime:
    """A drill context whose clock advances only when the step waits: scheduling without sleeping."""

    def __init__(self, start: float, stop_after: float | None = None):
        self.now = start
        self.waits: list[float] = []
        self.stop_after = stop_after
        ctx = self

        class _Stop:
            def wait(self, timeout: float) -> bool:
                ctx.waits.append(timeout)
                ctx.now += max(0.0, timeout)
                return ctx.stop_after is not None and ctx.now >= ctx.stop_after

            def is_set(self) -> bool:
                return ctx.stop_after is not None and ctx.now >= ctx.stop_after

        self.stop_requested = _Stop()

    def elapsed(self) -> float:
        return self.now


def _step(at):
    return SimpleNamespace(at=at, when=None)


def test_a_step_starts_at_its_time_on_the_load_clock_not_before():
    ctx = _FakeTime(start=3.37)
    start = wait_for_start(ctx, _step(20.0))
    assert start.proceed
    assert 20.0 <= ctx.now <= 20.5
    # waits of at most 0.5 s: a Ctrl-C is noticed within half a second
    assert max(ctx.waits) <= 0.5


def test_the_last_wait_lands_on_the_step_time():
    ctx = _FakeTime(start=0.0)
    wait_for_start(ctx, _step(1.3))
    assert abs(ctx.now - 1.3) < 1e-9  # min(0.5, at - elapsed): no overshoot


def test_a_step_already_due_runs_at_once():
    ctx = _FakeTime(start=25.0)
    assert wait_for_start(ctx, _step(20.0)).proceed
    assert ctx.waits == []


def test_a_stop_during_the_wait_skips_the_step():
    ctx = _FakeTime(start=0.0, stop_after=5.0)
    assert not wait_for_start(ctx, _step(20.0)).proceed
    assert ctx.now < 20.0


def test_the_engine_uses_the_clock(monkeypatch):
    """The real context counts from ``load_started_at``: 0 until the load started."""
    from mirrordrill.harness.drill.context import DrillContext
    ctx = DrillContext.__new__(DrillContext)
    ctx.load_started_at = 0.0
    assert ctx.elapsed() == 0.0
    monkeypatch.setattr("mirrordrill.harness.drill.context.time.monotonic", lambda: 130.0)
    ctx.load_started_at = 100.0
    assert ctx.elapsed() == 30.0


def test_the_report_summary_and_plots_count_from_the_load_start():
    import json
    from pathlib import Path

    from mirrordrill.harness.drill.results import SCHEMA, DrillResults, DrillSummary
    from mirrordrill.reports.attachments import load_start_ms
    from mirrordrill.reports.summary_html import summary_html
    raw = {**json.loads((Path(__file__).parent / "fixtures" / "summary-before-schema.json").read_text()),
           "schema": SCHEMA}
    first = raw["timeline"][0]["start_ts_ms"]
    raw["load_started_ms"] = first - 20_000  # the step ran 20 s after the load began
    summary = DrillSummary.model_validate(raw)
    html = summary_html(summary)
    assert "t = 0: load start" in html and "<td>20.0</td>" in html
    assert load_start_ms(DrillResults(summary)) == first - 20_000
