"""The reference checker: the flow check (vectorised, :mod:`harness.drill.checker.columnar`, where
the flow figures are defined) and the failover check in plain Python over lists of rows.

Records are matched by id ``(producer_id, seq)``, never by position.
"""

from __future__ import annotations

import gc
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

from mirrordrill.harness.drill.checker.columnar import ColumnarFlowInput, check_flow
from mirrordrill.harness.drill.checker.contract import FailoverInput, FailoverResult, MessageId
from mirrordrill.harness.drill.checker.figures import first_ids

__all__ = ["ColumnarFlowInput", "check_failover", "check_flow"]


@contextmanager
def _gc_paused() -> Iterator[None]:
    # Building one object per id triggers full collections over millions of live rows
    # that cannot be garbage; pausing the cyclic collector halves the run time.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _min(a: int | None, b: int) -> int:
    return b if a is None else min(a, b)


def check_failover(inp: FailoverInput) -> FailoverResult:
    """Skipped, reprocessed, RTO and RPO of one failed-over consumer group.

    Available ids: acked on the primary and either processed there by the group before
    the failure or seen on the DR cluster; plus ids acked on the DR cluster itself in the
    group's DR topics. Ids lost by replication count in RPO, never in skipped.
    """
    with _gc_paused():
        return _check_failover(inp)


def _check_failover(inp: FailoverInput) -> FailoverResult:
    primary_topics = set(inp.topic_map.values())
    failure = inp.failure_ts_ms

    primary_ack: dict[MessageId, int] = {}  # id -> first ack time on the primary
    dr_acked: set[MessageId] = set()
    for a in inp.acked:
        mid = (a.producer_id, a.seq)
        if a.cluster == inp.primary and a.topic in primary_topics:
            primary_ack[mid] = min(a.ack_ts_ms, primary_ack.get(mid, a.ack_ts_ms))
        elif a.cluster == inp.dr and a.topic in inp.dr_topics and (
                inp.dr_since_ms is None or a.ack_ts_ms >= inp.dr_since_ms):
            dr_acked.add(mid)

    on_dr = {(o.producer_id, o.seq) for o in inp.observed
             if o.cluster == inp.dr and o.topic in inp.topic_map}

    processings: Counter = Counter()
    before_failure: set[MessageId] = set()
    dr_processings: list[MessageId] = []
    dr_first_after: int | None = None
    for p in inp.processed:
        if p.group != inp.group or p.cluster not in (inp.primary, inp.dr):
            continue
        mid = (p.producer_id, p.seq)
        processings[mid] += 1
        if p.cluster == inp.primary and p.processed_ts_ms < failure:
            before_failure.add(mid)
        if p.cluster == inp.dr:
            dr_processings.append(mid)
            if p.processed_ts_ms >= failure:
                dr_first_after = _min(dr_first_after, p.processed_ts_ms)

    available = {mid for mid in primary_ack if mid in before_failure or mid in on_dr}
    available |= dr_acked
    skipped = available - processings.keys()
    rpo = {mid: ts for mid, ts in primary_ack.items() if ts < failure and mid not in on_dr}

    first_rpo = min(rpo.values()) if rpo else None
    last_rpo = max(rpo.values()) if rpo else None
    return FailoverResult(
        group=inp.group, strategy=inp.strategy, primary=inp.primary, dr=inp.dr,
        failure_ts_ms=failure,
        available=len(available),
        processed=len(processings),
        skipped=len(skipped),
        reprocessed=sum(n - 1 for n in processings.values()),
        reprocessed_across_failover=sum(1 for mid in dr_processings if mid in before_failure),
        rto_s=None if dr_first_after is None else (dr_first_after - failure) / 1000,
        rpo_records=len(rpo),
        rpo_window_s=None if first_rpo is None or last_rpo is None else (last_rpo - first_rpo) / 1000,
        rpo_first_ack_ts_ms=first_rpo,
        rpo_last_ack_ts_ms=last_rpo,
        skipped_sample=first_ids(skipped),
        rpo_sample=first_ids(rpo))
