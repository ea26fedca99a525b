"""Known-answer histories: clean replication plus injected faults whose exact counts are
known by construction. Used by the property tests, the Spark agreement tests and the
benchmark; never by a drill.
"""

from __future__ import annotations

import random
from collections import defaultdict
from dataclasses import dataclass, field

from harness.drill.checker.contract import FailoverInput, FlowInput, MessageId
from loadgen.histories.records import AckedSend, LagSample, ProcessedRecord, TargetRecord, TimelineEvent, UncertainSend

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
    expected = Expected({t: dict.fromkeys(COUNTS, 0) for t in topic_names},
                        {t: [] for t in topic_names}, {k: set() for k in SAMPLED})

    # The ledger: several producers interleaved over every partition.
    seqs = [0] * producers
    source_next = {(t, p): rng.randrange(0, 1000) for t in topic_names
                   for p in range(partitions)}
    acked: list[AckedSend] = []
    ts = START_MS
    for _ in range(records):
        pr = rng.randrange(producers)
        topic, partition = topic_names[rng.randrange(topics)], rng.randrange(partitions)
        ts += rng.randrange(0, 3)
        offset = source_next[(topic, partition)]
        source_next[(topic, partition)] += 1
        acked.append(AckedSend(source, topic, partition, offset, f"p{pr}", seqs[pr], ts,
                               ts + rng.randrange(1, 40), rng.randrange(50, 500),
                               rng.getrandbits(32)))
        seqs[pr] += 1
    end_ms = ts + 1000

    # Pick disjoint fault sets among the records.
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

    # Replicate: in-place records keep source order in the same partition number.
    target_next = {(remote_of[t], p): rng.randrange(0, 5000) for t in topic_names
                   for p in range(partitions)}
    first: dict[int, list] = {}  # record index -> [remote, partition, offset, seen_ts]
    in_place: dict[tuple[str, int], list[int]] = defaultdict(list)
    for i, a in enumerate(acked):
        kind = fault_of.get(i)
        if kind in ("lost", "misplaced"):
            continue
        key = (remote_of[a.topic], a.partition)
        first[i] = [key[0], key[1], target_next[key], a.send_ts_ms + rng.randrange(2, 400)]
        target_next[key] += 1
        in_place[(a.topic, a.partition)].append(i)
    for i in sorted(i for i, k in fault_of.items() if k == "misplaced"):
        a = acked[i]
        key = (remote_of[a.topic], (a.partition + 1) % partitions)
        first[i] = [key[0], key[1], target_next[key], a.send_ts_ms + rng.randrange(2, 400)]
        target_next[key] += 1

    # Swap target positions of adjacent clean in-place records of one source partition.
    position_in_walk = {i: (k, j) for k, walk in in_place.items() for j, i in enumerate(walk)}
    swapped: set[int] = set()
    pairs = 0
    tries = 0
    while pairs < faults.swapped_pairs and tries < 50 * faults.swapped_pairs + 100 and first:
        tries += 1
        i = rng.randrange(records)
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
        expected.by_topic[acked[nxt].topic]["reordered"] += 1
        expected.ids["reordered"].add((acked[nxt].producer_id, acked[nxt].seq))

    observed: list[TargetRecord] = []
    for i, (remote, partition, offset, seen) in first.items():
        a = acked[i]
        kind = fault_of.get(i)
        checksum = a.checksum ^ 0x5A5A if kind == "checksum_mismatches" else a.checksum
        observed.append(TargetRecord(target, remote, partition, offset, a.producer_id,
                                     a.seq, seen, kind != "bad_reads", checksum))

    # Faults appended after the clean copy: extra copies and source-side duplicates.
    for i in sorted(fault_of):
        a, kind = acked[i], fault_of[i]
        mid = (a.producer_id, a.seq)
        counts = expected.by_topic[a.topic]
        if kind == "duplicated":
            remote, partition, _, seen = first[i]
            for _ in range(rng.randint(1, max(1, faults.max_extra_copies))):
                observed.append(TargetRecord(
                    target, remote, partition, target_next[(remote, partition)],
                    a.producer_id, a.seq, seen + rng.randrange(1, 1000), True, a.checksum))
                target_next[(remote, partition)] += 1
                counts["duplicates"] += 1
            expected.ids["duplicates"].add(mid)
        elif kind == "source_duplicates":
            again = AckedSend(source, a.topic, a.partition,
                              source_next[(a.topic, a.partition)], a.producer_id, a.seq,
                              end_ms, end_ms + 5, a.size_bytes, a.checksum)
            source_next[(a.topic, a.partition)] += 1
            acked.append(again)
            key = (remote_of[a.topic], a.partition)
            observed.append(TargetRecord(target, key[0], key[1], target_next[key],
                                         a.producer_id, a.seq, end_ms + 50, True,
                                         a.checksum))
            target_next[key] += 1
            counts["source_duplicates"] += 1
            counts["duplicates"] += 1
            expected.ids["duplicates"].add(mid)
        elif kind in ("lost", "misplaced"):
            expected.ids[kind].add(mid)
            counts[kind] += 1
        elif kind in ("bad_reads", "checksum_mismatches"):
            expected.ids["corrupted"].add(mid)
            counts["corrupted"] += 1

    for i in range(records):
        a = acked[i]
        counts = expected.by_topic[a.topic]
        counts["acked"] += 1
        if i in first:
            counts["replicated"] += 1
            expected.latencies[a.topic].append(first[i][3] - a.send_ts_ms)

    # Records that were never acknowledged.
    uncertain: list[UncertainSend] = []
    for n in range(faults.phantoms):
        topic = topic_names[rng.randrange(topics)]
        key = (remote_of[topic], rng.randrange(partitions))
        observed.append(TargetRecord(target, key[0], key[1], target_next[key], "ghost", n,
                                     end_ms + n, True, rng.getrandbits(32)))
        target_next[key] += 1
        expected.by_topic[topic]["unexpected"] += 1
        expected.ids["unexpected"].add(("ghost", n))
    for n in range(faults.uncertain_delivered + faults.uncertain_undelivered):
        topic = topic_names[rng.randrange(topics)]
        uncertain.append(UncertainSend(source, topic, "maybe", n, end_ms + n,
                                       "Local: Message timed out\n(after retries)"))
        if n < faults.uncertain_delivered:
            key = (remote_of[topic], rng.randrange(partitions))
            observed.append(TargetRecord(target, key[0], key[1], target_next[key], "maybe",
                                         n, end_ms + 100 + n, True, rng.getrandbits(32)))
            target_next[key] += 1
            expected.by_topic[topic]["uncertain_delivered"] += 1
            expected.ids["uncertain_delivered"].add(("maybe", n))

    # The observer reads some positions twice: never a duplicate.
    for _ in range(faults.rereads if observed else 0):
        o = observed[rng.randrange(len(observed))]
        observed.append(TargetRecord(o.cluster, o.topic, o.partition, o.offset,
                                     o.producer_id, o.seq, o.seen_ts_ms + 5000,
                                     o.checksum_ok, o.checksum))

    # Rows of other clusters and topics, which the checker must ignore.
    acked.append(AckedSend("C", "t0", 0, 0, "p0", 0, START_MS, START_MS + 1, 10, 1))
    acked.append(AckedSend(source, "other", 0, 0, "p0", 10**9, START_MS, START_MS + 1, 10, 1))
    observed.append(TargetRecord("C", remote_of["t0"], 0, 0, "ghost", 10**6, START_MS, True, 1))
    observed.append(TargetRecord(target, "A.other", 0, 0, "ghost", 10**6, START_MS, True, 1))
    uncertain.append(UncertainSend("C", "t0", "maybe", 10**6, START_MS, "elsewhere"))

    # A fault window in the middle of the run.
    middle = START_MS + (ts - START_MS) // 3
    event = TimelineEvent("broker-kill", "kill", middle, middle + 2000, "ok",
                          'broker 1, "SIGKILL"')
    for i in range(records):
        ack = acked[i].ack_ts_ms
        if middle <= ack <= middle + 2000:
            expected.event_acked += 1
            expected.event_lost += fault_of.get(i) == "lost"

    samples = _lag_samples(rng, source, target, remote_of, partitions, end_ms) \
        if lag_samples else []
    if shuffle:  # the checker must not depend on the order of rows
        rng.shuffle(acked)
        rng.shuffle(observed)
        rng.shuffle(uncertain)
    flow = FlowInput(source, target, topic_map, acked, observed, uncertain, samples, (event,))
    return SyntheticFlow(flow, expected)


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
    acked: list[AckedSend] = []
    observed: list[TargetRecord] = []
    processed: list[ProcessedRecord] = []
    exp = dict(available=0, processed=0, skipped=0, reprocessed=0,
               reprocessed_across_failover=0, rpo_records=0)
    rpo_acks: list[int] = []
    dr_first = failure + rto_ms
    group = "billing"
    for p in range(partitions):
        n = records_per_partition
        replicated = rng.randint(0, n)
        consumed = rng.randint(0, n)
        resume = min(max(0, min(consumed, replicated) + shift), replicated)
        for i in range(n):
            ack = START_MS + 10 * (i * partitions + p) + 1
            acked.append(AckedSend("A", "t", p, i, f"prod{p}", i, ack - 1, ack, 100, i))
            if i < replicated:
                observed.append(TargetRecord("B", "A.t", p, 7 + i, f"prod{p}", i,
                                             ack + 50, True, i))
            else:
                rpo_acks.append(ack)
            if i < consumed:
                processed.append(ProcessedRecord(group, "A", "t", p, i, f"prod{p}", i,
                                                 ack + 20))
            if resume <= i < replicated:
                processed.append(ProcessedRecord(group, "B", "A.t", p, 7 + i, f"prod{p}", i,
                                                 dr_first + i))
        exp["available"] += max(consumed, replicated)
        exp["processed"] += len(set(range(consumed)) | set(range(resume, replicated)))
        exp["skipped"] += max(0, resume - consumed)
        overlap = max(0, min(consumed, replicated) - resume)
        exp["reprocessed"] += overlap
        exp["reprocessed_across_failover"] += overlap
    exp["rpo_records"] = len(rpo_acks)

    # Producers that failed over write to B's own topic; the group starts past some.
    for i in range(dr_local):
        ack = failure + 100 + i
        acked.append(AckedSend("B", "t", 0, i, "dr-prod", i, ack - 1, ack, 100, i))
        if i >= dr_local_skipped:
            processed.append(ProcessedRecord(group, "B", "t", 0, i, "dr-prod", i,
                                             dr_first + 10**6 + i))
    exp["available"] += dr_local
    exp["processed"] += dr_local - min(dr_local, dr_local_skipped)
    exp["skipped"] += min(dr_local, dr_local_skipped)

    # A rebalance on A before the failure: some records processed twice there.
    done_on_a = [r for r in processed if r.cluster == "A"]
    for r in rng.sample(done_on_a, min(rebalance_repeats, len(done_on_a))):
        processed.append(ProcessedRecord(group, "A", r.topic, r.partition, r.offset,
                                         r.producer_id, r.seq, r.processed_ts_ms + 1))
        exp["reprocessed"] += 1

    # Noise: another group, and a processing on a third cluster.
    processed.append(ProcessedRecord("other-group", "B", "A.t", 0, 7, "prod0", 0, failure))
    processed.append(ProcessedRecord(group, "C", "A.t", 0, 7, "prod0", 0, failure - 5))

    on_dr = [r.processed_ts_ms for r in processed if r.cluster == "B" and r.group == group]
    exp["rto_s"] = (min(on_dr) - failure) / 1000 if on_dr else None
    exp["rpo_window_s"] = (max(rpo_acks) - min(rpo_acks)) / 1000 if rpo_acks else None
    if shuffle:
        for rows in (acked, observed, processed):
            rng.shuffle(rows)
    inp = FailoverInput(group, f"shift{shift:+d}", "A", "B", failure, {"A.t": "t"},
                        processed, acked, observed, dr_topics=("t",) if dr_local else ())
    return SyntheticFailover(inp, exp)
