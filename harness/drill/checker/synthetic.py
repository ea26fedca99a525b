"""Known-answer histories: clean replication plus injected faults whose exact counts are
known by construction. Used by the property tests, the Spark agreement tests and the
benchmark; never by a drill.
"""

from __future__ import annotations

import random
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from mirrordrill.harness.drill.checker.contract import FailoverInput, FlowInput, MessageId
from mirrordrill.loadgen.histories.records import (
    AckedSend,
    LagSample,
    ProcessedRecord,
    TargetRecord,
    TimelineEvent,
    UncertainSend,
)

START_MS = 1_700_000_000_000
COUNTS = ("acked", "replicated", "lost", "duplicates", "reordered", "misplaced", "corrupted",
          "unexpected", "uncertain_delivered", "source_duplicates")
SAMPLED = ("lost", "duplicates", "reordered", "misplaced", "corrupted", "unexpected",
           "uncertain_delivered")


@dataclass(frozen=True)
class FaultPlan:
    """How many records get each fault; each record gets at most one."""

    lost: int = 0
    duplicated: int = 0          # records re-appended at new target offsets
    max_extra_copies: int = 1    # copies per duplicated record: 1..max
    swapped_pairs: int = 0       # adjacent pairs whose target positions are swapped
    misplaced: int = 0           # records landing in the next partition number
    bad_reads: int = 0           # observer's recomputed checksum fails
    checksum_mismatches: int = 0  # envelope checksum differs from the ledger's
    source_duplicates: int = 0   # ids acked twice on the source (and copied twice)
    phantoms: int = 0            # never-acked, never-sent records on the target
    uncertain_delivered: int = 0
    uncertain_undelivered: int = 0
    rereads: int = 0             # observer reads the same position again


@dataclass
class Expected:
    """The answer, per source topic; ``ids`` holds the id set behind each sampled count."""

    by_topic: dict[str, dict[str, int]]
    latencies: dict[str, list[int]]
    ids: dict[str, set[MessageId]]
    event_acked: int = 0
    event_lost: int = 0

    def total(self, name: str) -> int:
        """A count summed over topics."""
        return sum(t[name] for t in self.by_topic.values())


@dataclass
class SyntheticFlow:
    """A flow input and its known answer."""

    flow: FlowInput
    expected: Expected


def synthesize_flow(records: int, *, seed: int = 0, producers: int = 3, topics: int = 2,
                    partitions: int = 3, faults: FaultPlan = FaultPlan(),
                    source: str = "A", target: str = "B", lag_samples: bool = True,
                    shuffle: bool = True) -> SyntheticFlow:
    """Generate one flow's histories with the given faults injected."""
    rng = random.Random(seed)
    topic_names = [f"t{i}" for i in range(topics)]
    remote_of = {t: f"{source}.{t}" for t in topic_names}
    topic_map = {r: t for t, r in remote_of.items()}
    f = _Histories(rng, source, target, partitions, remote_of,
                   Expected({t: dict.fromkeys(COUNTS, 0) for t in topic_names},
                            {t: [] for t in topic_names}, {k: set() for k in SAMPLED}))
    last_ack = _send(f, records, producers, topic_names)
    end_ms = last_ack + 1000
    fault_of = _pick_faults(rng, records, faults, partitions)
    first, in_place = _replicate(f, fault_of, topic_names)
    _swap_neighbours(f, faults.swapped_pairs, records, first, in_place, fault_of)
    _copy_first_sightings(f, first, fault_of)
    _copy_again(f, first, fault_of, faults.max_extra_copies, end_ms)
    _count_acked_and_replicated(f, records, first)
    _never_acked(f, faults, topic_names, end_ms)
    _reread(f, faults.rereads)
    _add_other_clusters_and_topics(f)
    event = _fault_window(f, records, last_ack, fault_of)
    samples = _lag_samples(rng, source, target, remote_of, partitions, end_ms) \
        if lag_samples else []
    if shuffle:  # the checker must not depend on the order of rows
        rng.shuffle(f.acked)
        rng.shuffle(f.observed)
        rng.shuffle(f.uncertain)
    flow = FlowInput(source, target, topic_map, f.acked, f.observed, f.uncertain, samples, (event,))
    return SyntheticFlow(flow, f.expected)


# Where and when a record first lands on the target: [remote topic, partition, offset, seen_ts_ms];
# a list, not a tuple, because swapping two neighbours exchanges their offsets in place.
_Landing = list[Any]


@dataclass
class _Histories:
    """One flow's histories while they are generated, and the answer so far."""

    rng: random.Random
    source: str
    target: str
    partitions: int
    remote_of: dict[str, str]
    expected: Expected
    acked: list[AckedSend] = field(default_factory=list)
    observed: list[TargetRecord] = field(default_factory=list)
    uncertain: list[UncertainSend] = field(default_factory=list)
    source_next: dict[tuple[str, int], int] = field(default_factory=dict)  # next offset per partition
    target_next: dict[tuple[str, int], int] = field(default_factory=dict)

    def next_target_offset(self, remote: str, partition: int) -> int:
        """The offset the next record appended to a target partition gets."""
        offset = self.target_next[(remote, partition)]
        self.target_next[(remote, partition)] += 1
        return offset

    def land(self, remote: str, partition: int, producer_id: str, seq: int, seen_ts_ms: int,
             checksum_ok: bool, checksum: int) -> None:
        """The observer reads a record appended at the end of a target partition."""
        offset = self.next_target_offset(remote, partition)
        self.observed.append(TargetRecord(self.target, remote, partition, offset, producer_id, seq,
                                          seen_ts_ms, checksum_ok, checksum))

    def count(self, topic: str, kind: str, mid: MessageId | None, n: int = 1) -> None:
        """``n`` more of ``kind`` in ``topic``'s answer; ``mid`` joins the kind's id set."""
        self.expected.by_topic[topic][kind] += n
        if mid is not None:
            self.expected.ids[kind].add(mid)


def _send(f: _Histories, records: int, producers: int, topic_names: list[str]) -> int:
    """The ledger: several producers interleaved over every partition. Returns the last ack time."""
    rng = f.rng
    seqs = [0] * producers
    f.source_next = {(t, p): rng.randrange(0, 1000) for t in topic_names
                     for p in range(f.partitions)}
    ts = START_MS
    for _ in range(records):
        pr = rng.randrange(producers)
        topic, partition = topic_names[rng.randrange(len(topic_names))], rng.randrange(f.partitions)
        ts += rng.randrange(0, 3)
        offset = f.source_next[(topic, partition)]
        f.source_next[(topic, partition)] += 1
        f.acked.append(AckedSend(f.source, topic, partition, offset, f"p{pr}", seqs[pr], ts,
                                 ts + rng.randrange(1, 40), rng.randrange(50, 500),
                                 rng.getrandbits(32)))
        seqs[pr] += 1
    return ts


def _pick_faults(rng: random.Random, records: int, faults: FaultPlan, partitions: int) -> dict[int, str]:
    """Disjoint fault sets among the records: record index -> its one fault."""
    plan = [("lost", faults.lost), ("misplaced", faults.misplaced if partitions > 1 else 0),
            ("duplicated", faults.duplicated), ("bad_reads", faults.bad_reads),
            ("checksum_mismatches", faults.checksum_mismatches),
            ("source_duplicates", faults.source_duplicates)]
    wanted = min(records, sum(n for _, n in plan))
    chosen = rng.sample(range(records), wanted)
    fault_of: dict[int, str] = {}
    for name, n in plan:
        for i in chosen[:n]:
            fault_of[i] = name
        chosen = chosen[n:]
    return fault_of


def _replicate(f: _Histories, fault_of: dict[int, str],
               topic_names: list[str]) -> tuple[dict[int, _Landing], dict[tuple[str, int], list[int]]]:
    """Where each replicated record first lands. In-place records keep source order in the same
    partition number (returned per source partition, in order); misplaced ones go to the next."""
    rng = f.rng
    f.target_next = {(f.remote_of[t], p): rng.randrange(0, 5000) for t in topic_names
                     for p in range(f.partitions)}
    first: dict[int, _Landing] = {}
    in_place: dict[tuple[str, int], list[int]] = defaultdict(list)
    for i, a in enumerate(f.acked):
        if fault_of.get(i) in ("lost", "misplaced"):
            continue
        remote = f.remote_of[a.topic]
        first[i] = [remote, a.partition, f.next_target_offset(remote, a.partition),
                    a.send_ts_ms + rng.randrange(2, 400)]
        in_place[(a.topic, a.partition)].append(i)
    for i in sorted(i for i, k in fault_of.items() if k == "misplaced"):
        a = f.acked[i]
        remote, partition = f.remote_of[a.topic], (a.partition + 1) % f.partitions
        first[i] = [remote, partition, f.next_target_offset(remote, partition),
                    a.send_ts_ms + rng.randrange(2, 400)]
    return first, in_place


def _swap_neighbours(f: _Histories, wanted: int, records: int, first: dict[int, _Landing],
                     in_place: dict[tuple[str, int], list[int]], fault_of: dict[int, str]) -> None:
    """Swap target positions of adjacent clean in-place records of one source partition: the
    second of each pair is reordered."""
    position_in_walk = {i: (k, j) for k, walk in in_place.items() for j, i in enumerate(walk)}
    swapped: set[int] = set()
    pairs = 0
    tries = 0
    while pairs < wanted and tries < 50 * wanted + 100 and first:
        tries += 1
        i = f.rng.randrange(records)
        if i not in position_in_walk or i in fault_of or i in swapped:
            continue
        key, j = position_in_walk[i]
        if j + 1 >= len(in_place[key]):
            continue
        nxt = in_place[key][j + 1]
        if nxt in fault_of or nxt in swapped:
            continue
        first[i][2], first[nxt][2] = first[nxt][2], first[i][2]
        swapped |= {i, nxt}
        pairs += 1
        a = f.acked[nxt]
        f.count(a.topic, "reordered", (a.producer_id, a.seq))


def _copy_first_sightings(f: _Histories, first: dict[int, _Landing], fault_of: dict[int, str]) -> None:
    """The observer's read of each replicated record's first copy, with its checksum faults."""
    for i, (remote, partition, offset, seen) in first.items():
        a = f.acked[i]
        kind = fault_of.get(i)
        checksum = a.checksum ^ 0x5A5A if kind == "checksum_mismatches" else a.checksum
        f.observed.append(TargetRecord(f.target, remote, partition, offset, a.producer_id,
                                       a.seq, seen, kind != "bad_reads", checksum))


def _copy_again(f: _Histories, first: dict[int, _Landing], fault_of: dict[int, str],
                max_extra_copies: int, end_ms: int) -> None:
    """Faults appended after the clean copy (extra copies and source-side duplicates), and the
    answer for every injected fault."""
    rng = f.rng
    for i in sorted(fault_of):
        a, kind = f.acked[i], fault_of[i]
        mid = (a.producer_id, a.seq)
        if kind == "duplicated":
            remote, partition, _, seen = first[i]
            for _ in range(rng.randint(1, max(1, max_extra_copies))):
                f.land(remote, partition, a.producer_id, a.seq, seen + rng.randrange(1, 1000), True,
                       a.checksum)
                f.count(a.topic, "duplicates", mid)
        elif kind == "source_duplicates":
            f.acked.append(AckedSend(f.source, a.topic, a.partition,
                                     f.source_next[(a.topic, a.partition)], a.producer_id, a.seq,
                                     end_ms, end_ms + 5, a.size_bytes, a.checksum))
            f.source_next[(a.topic, a.partition)] += 1
            f.land(f.remote_of[a.topic], a.partition, a.producer_id, a.seq, end_ms + 50, True,
                   a.checksum)
            f.count(a.topic, "source_duplicates", None)
            f.count(a.topic, "duplicates", mid)
        elif kind in ("lost", "misplaced"):
            f.count(a.topic, kind, mid)
        elif kind in ("bad_reads", "checksum_mismatches"):
            f.count(a.topic, "corrupted", mid)


def _count_acked_and_replicated(f: _Histories, records: int, first: dict[int, _Landing]) -> None:
    """Every generated record was acked; the ones with a landing were replicated, with a latency."""
    for i in range(records):
        a = f.acked[i]
        counts = f.expected.by_topic[a.topic]
        counts["acked"] += 1
        if i in first:
            counts["replicated"] += 1
            f.expected.latencies[a.topic].append(first[i][3] - a.send_ts_ms)


def _never_acked(f: _Histories, faults: FaultPlan, topic_names: list[str], end_ms: int) -> None:
    """Records that were never acknowledged: phantoms, and uncertain sends delivered or not."""
    rng = f.rng
    for n in range(faults.phantoms):
        topic = topic_names[rng.randrange(len(topic_names))]
        f.land(f.remote_of[topic], rng.randrange(f.partitions), "ghost", n, end_ms + n, True,
               rng.getrandbits(32))
        f.count(topic, "unexpected", ("ghost", n))
    for n in range(faults.uncertain_delivered + faults.uncertain_undelivered):
        topic = topic_names[rng.randrange(len(topic_names))]
        f.uncertain.append(UncertainSend(f.source, topic, "maybe", n, end_ms + n,
                                         "Local: Message timed out\n(after retries)"))
        if n < faults.uncertain_delivered:
            f.land(f.remote_of[topic], rng.randrange(f.partitions), "maybe", n, end_ms + 100 + n, True,
                   rng.getrandbits(32))
            f.count(topic, "uncertain_delivered", ("maybe", n))


def _reread(f: _Histories, rereads: int) -> None:
    """The observer reads some positions twice: never a duplicate."""
    for _ in range(rereads if f.observed else 0):
        o = f.observed[f.rng.randrange(len(f.observed))]
        f.observed.append(TargetRecord(o.cluster, o.topic, o.partition, o.offset,
                                       o.producer_id, o.seq, o.seen_ts_ms + 5000,
                                       o.checksum_ok, o.checksum))


def _add_other_clusters_and_topics(f: _Histories) -> None:
    """Rows of other clusters and topics, which the checker must ignore."""
    f.acked.append(AckedSend("C", "t0", 0, 0, "p0", 0, START_MS, START_MS + 1, 10, 1))
    f.acked.append(AckedSend(f.source, "other", 0, 0, "p0", 10**9, START_MS, START_MS + 1, 10, 1))
    f.observed.append(TargetRecord("C", f.remote_of["t0"], 0, 0, "ghost", 10**6, START_MS, True, 1))
    f.observed.append(TargetRecord(f.target, "A.other", 0, 0, "ghost", 10**6, START_MS, True, 1))
    f.uncertain.append(UncertainSend("C", "t0", "maybe", 10**6, START_MS, "elsewhere"))


def _fault_window(f: _Histories, records: int, last_ack: int, fault_of: dict[int, str]) -> TimelineEvent:
    """A fault window in the middle of the run, and the records acked (and lost) during it."""
    middle = START_MS + (last_ack - START_MS) // 3
    event = TimelineEvent("broker-kill", "kill", middle, middle + 2000, "ok",
                          'broker 1, "SIGKILL"')
    for i in range(records):
        ack = f.acked[i].ack_ts_ms
        if middle <= ack <= middle + 2000:
            f.expected.event_acked += 1
            f.expected.event_lost += fault_of.get(i) == "lost"
    return event


def _lag_samples(rng: random.Random, source: str, target: str, remote_of: dict[str, str],
                 partitions: int, end_ms: int) -> list[LagSample]:
    """Roughly one sample a second per partition and side, some seconds missing or doubled."""
    out: list[LagSample] = []
    for topic, remote in remote_of.items():
        for p in range(partitions):
            src = tgt = rng.randrange(0, 100)
            for second in range(START_MS // 1000, end_ms // 1000 + 1):
                src += rng.randrange(0, 50)
                tgt = min(src, tgt + rng.randrange(0, 60))
                for cluster, name, end in ((source, topic, src), (target, remote, tgt)):
                    for _ in range(rng.choice((0, 1, 1, 1, 2))):
                        out.append(LagSample(second * 1000 + rng.randrange(1000), cluster,
                                             name, p, end - rng.randrange(0, 3)))
    return out


# --------------------------------------------------------------------------- failover


@dataclass
class SyntheticFailover:
    """A failed-over group's input and its known answer."""

    failover: FailoverInput
    expected: dict[str, object] = field(default_factory=dict)


def synthesize_failover(records_per_partition: int, *, seed: int = 0, partitions: int = 3,
                        shift: int = 0, dr_local: int = 0, dr_local_skipped: int = 0,
                        rebalance_repeats: int = 0, rto_ms: int = 4321,
                        shuffle: bool = True) -> SyntheticFailover:
    """One group on topic ``t`` failed over from A to B with a start-offset ``shift``.

    Per partition, replication reached a random prefix of the records and the group had
    processed another random prefix on A at the failure; on B it resumes at the
    translated position plus ``shift`` (negative: reprocessing, positive: skipping).
    """
    rng = random.Random(seed)
    failure = START_MS + 10 * records_per_partition * partitions + 10_000
    g = _GroupHistories(failure + rto_ms)
    for p in range(partitions):
        _fail_over_partition(g, rng, p, partitions, records_per_partition, shift)
    g.exp["rpo_records"] = len(g.rpo_acks)
    _dr_local(g, failure, dr_local, dr_local_skipped)
    _rebalance_on_primary(g, rng, rebalance_repeats)

    # Noise: another group, and a processing on a third cluster.
    g.processed.append(ProcessedRecord("other-group", "B", "A.t", 0, 7, "prod0", 0, failure))
    g.processed.append(ProcessedRecord(_GROUP, "C", "A.t", 0, 7, "prod0", 0, failure - 5))

    on_dr = [r.processed_ts_ms for r in g.processed if r.cluster == "B" and r.group == _GROUP]
    g.exp["rto_s"] = (min(on_dr) - failure) / 1000 if on_dr else None
    g.exp["rpo_window_s"] = (max(g.rpo_acks) - min(g.rpo_acks)) / 1000 if g.rpo_acks else None
    if shuffle:
        for rows in (g.acked, g.observed, g.processed):
            rng.shuffle(rows)
    inp = FailoverInput(_GROUP, f"shift{shift:+d}", "A", "B", failure, {"A.t": "t"},
                        g.processed, g.acked, g.observed, dr_topics=("t",) if dr_local else ())
    return SyntheticFailover(inp, g.exp)


_GROUP = "billing"


@dataclass
class _GroupHistories:
    """One failed-over group's histories while they are generated, and the answer so far."""

    dr_first: int  # when the group first processes on B
    acked: list[AckedSend] = field(default_factory=list)
    observed: list[TargetRecord] = field(default_factory=list)
    processed: list[ProcessedRecord] = field(default_factory=list)
    exp: dict[str, Any] = field(default_factory=lambda: dict(
        available=0, processed=0, skipped=0, reprocessed=0, reprocessed_across_failover=0,
        rpo_records=0))
    rpo_acks: list[int] = field(default_factory=list)  # ack times of records that never reached B

    def add(self, **counts: int) -> None:
        """More of some counts of the answer."""
        for name, n in counts.items():
            self.exp[name] += n


def _fail_over_partition(g: _GroupHistories, rng: random.Random, p: int, partitions: int, n: int,
                         shift: int) -> None:
    """Partition ``p``: replicated and consumed prefixes at the failure, the resumption on B."""
    replicated = rng.randint(0, n)
    consumed = rng.randint(0, n)
    resume = min(max(0, min(consumed, replicated) + shift), replicated)
    for i in range(n):
        ack = START_MS + 10 * (i * partitions + p) + 1
        g.acked.append(AckedSend("A", "t", p, i, f"prod{p}", i, ack - 1, ack, 100, i))
        if i < replicated:
            g.observed.append(TargetRecord("B", "A.t", p, 7 + i, f"prod{p}", i, ack + 50, True, i))
        else:
            g.rpo_acks.append(ack)
        if i < consumed:
            g.processed.append(ProcessedRecord(_GROUP, "A", "t", p, i, f"prod{p}", i, ack + 20))
        if resume <= i < replicated:
            g.processed.append(ProcessedRecord(_GROUP, "B", "A.t", p, 7 + i, f"prod{p}", i,
                                               g.dr_first + i))
    overlap = max(0, min(consumed, replicated) - resume)
    g.add(available=max(consumed, replicated),
         processed=len(set(range(consumed)) | set(range(resume, replicated))),
         skipped=max(0, resume - consumed), reprocessed=overlap, reprocessed_across_failover=overlap)


def _dr_local(g: _GroupHistories, failure: int, dr_local: int, dr_local_skipped: int) -> None:
    """Producers that failed over write to B's own topic; the group starts past some."""
    for i in range(dr_local):
        ack = failure + 100 + i
        g.acked.append(AckedSend("B", "t", 0, i, "dr-prod", i, ack - 1, ack, 100, i))
        if i >= dr_local_skipped:
            g.processed.append(ProcessedRecord(_GROUP, "B", "t", 0, i, "dr-prod", i,
                                               g.dr_first + 10**6 + i))
    g.add(available=dr_local, processed=dr_local - min(dr_local, dr_local_skipped),
         skipped=min(dr_local, dr_local_skipped))


def _rebalance_on_primary(g: _GroupHistories, rng: random.Random, repeats: int) -> None:
    """A rebalance on A before the failure: some records processed twice there."""
    done_on_a = [r for r in g.processed if r.cluster == "A"]
    for r in rng.sample(done_on_a, min(repeats, len(done_on_a))):
        g.processed.append(ProcessedRecord(_GROUP, "A", r.topic, r.partition, r.offset,
                                           r.producer_id, r.seq, r.processed_ts_ms + 1))
    g.add(reprocessed=min(repeats, len(done_on_a)))

