"""Everything a running drill holds, shared by the engine, the nemesis steps and failover."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from mirrordrill.harness.drill.replicators.interface import ReplicatorAdapter
from mirrordrill.harness.drill.replicators.setup import FlowSpec
from mirrordrill.harness.drill.results import FailbackSummary
from mirrordrill.harness.drill.schema import ConsumerDef, ProducerDef, Scenario
from mirrordrill.harness.lab.environment import Environment
from mirrordrill.harness.lab.network.stable_address import StableAddress
from mirrordrill.loadgen.app_consumer import AppConsumer, CommitPolicy
from mirrordrill.loadgen.histories.kinds import TIMELINE_EVENTS, history_path
from mirrordrill.loadgen.histories.records import TimelineEvent
from mirrordrill.loadgen.histories.writer import HistoryWriter
from mirrordrill.loadgen.lag_sampler import LagSampler
from mirrordrill.loadgen.observer import Observer
from mirrordrill.loadgen.runner import LoadRunner


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass
class ProducerSlot:
    """One producer definition and the load process running it now (if any)."""

    definition: ProducerDef
    cluster: str  # where it produces now (moves at failover)
    runner: LoadRunner | None = None
    runs: list[LoadRunner] = field(default_factory=list)


def new_app_consumer(definition: ConsumerDef, histories: Path) -> AppConsumer:
    """A fresh application instance of one consumer group (its own processed-records file)."""
    c = definition.commit
    return AppConsumer(definition.group, histories,
                       CommitPolicy(mode=c.mode, interval_ms=c.interval_ms, every_records=c.every_records))


@dataclass(frozen=True)
class FailoverRecord:
    """One consumer group moved by a failover: what the checker needs to measure its cost."""

    group: str
    strategy: str  # the group's failover_strategy
    primary: str
    dr: str
    failure_ts_ms: int  # when the primary was declared lost (or producers stopped, when planned)
    topic_map: Mapping[str, str]  # remote copy on dr -> original topic on the primary
    dr_topics: tuple[str, ...]  # same-named topics the group also reads on dr
    dr_since_ms: int | None = None  # dr was wiped by a failback then: older acks cannot be there


@dataclass
class ConsumerSlot:
    """One consumer group's application: the instance running now, on which cluster."""

    definition: ConsumerDef
    consumer: AppConsumer
    cluster: str
    failover: FailoverRecord | None = None  # set once it moved
    retired: list[AppConsumer] = field(default_factory=list)  # instances that died with their cluster


@dataclass
class DrillContext:
    """The running drill's state, which the phases, the steps and failover share.

    Each field has one owner, the one module that sets it; the others only read it (or, for the
    lists, only append what they started, for the stops to find):

    - the replication phase (``phases.ReplicationPhase``) makes the context: ``scenario``,
      ``out_dir``, ``env``, ``histories``, ``log``, ``new_replicator``, ``drill_dir`` and
      ``stable_address`` are given at construction and never reassigned;
    - the load phase (``load_phase.LoadPhase``) sets the load clock once, through
      ``start_load_clock`` (``load_started_at``, ``load_started_ms``, ``load_until``), and fills
      ``producers``, ``consumers``, ``observers`` and ``lag_samplers``; failover (``failover.py``)
      moves producers and consumers and extends ``load_until`` after a late failover;
    - failback (``failback.py``) owns ``replicator`` after the start (it replaces the drill's own by
      the copy back, then the re-protect), ``retired_replicators``, ``wiped_at`` and ``failbacks``;
    - failover owns ``failovers`` and ``abandoned``; the timeline phase sets ``stop_requested``.
    """

    scenario: Scenario
    out_dir: Path
    env: Environment
    replicator: ReplicatorAdapter
    histories: Path
    log: Callable[[str], None]
    producers: list[ProducerSlot] = field(default_factory=list)
    consumers: list[ConsumerSlot] = field(default_factory=list)
    observers: list[Observer] = field(default_factory=list)
    lag_samplers: list[LagSampler] = field(default_factory=list)
    load_started_at: float = 0.0  # monotonic
    load_started_ms: int = 0  # the same instant, epoch ms (summary.json's load_started_ms)
    load_until: float = 0.0  # seconds after load start; a late failover extends it (see failover.py)
    failovers: list[FailoverRecord] = field(default_factory=list)
    failbacks: list[FailbackSummary] = field(default_factory=list)  # the failback step's figures, as saved
    # Builds another replicator of the drill's kind (failback's copy back, re-protect): flows, folder.
    new_replicator: Callable[[list[FlowSpec], Path], ReplicatorAdapter] | None = None
    retired_replicators: list[ReplicatorAdapter] = field(default_factory=list)  # replaced by failback; stopped at the end
    stable_address: StableAddress | None = None
    wiped_at: dict[str, int] = field(default_factory=dict)  # cluster -> when a failback wiped it (ms)
    abandoned: set[str] = field(default_factory=set)  # clusters lost in an unplanned failover
    stop_requested: threading.Event = field(default_factory=threading.Event)
    drill_dir: Path | None = None  # the drill file's folder: runbook commands run there
    _timeline: HistoryWriter[TimelineEvent] | None = None
    _timeline_lock: threading.Lock = field(default_factory=threading.Lock)  # failover moves groups in parallel

    def start_load_clock(self, started_at: float, started_ms: int, until_s: float) -> None:
        """The load phase's one setting of the clock the timeline counts from (monotonic, epoch ms)."""
        self.load_started_at, self.load_started_ms, self.load_until = started_at, started_ms, until_s

    def timeline_writer(self) -> HistoryWriter[TimelineEvent]:
        if self._timeline is None:
            self._timeline = HistoryWriter(TIMELINE_EVENTS, history_path(self.histories, "timeline", "engine"))
        return self._timeline

    def record(self, name: str, kind: str, start_ms: int, end_ms: int | None, outcome: str, detail: str = "",
               condition: str = "", condition_held: bool | None = None,
               condition_checked_ts_ms: int | None = None) -> None:
        """One timeline event; a step's ``when`` goes with it (see ``steps.StepStart``)."""
        with self._timeline_lock:
            w = self.timeline_writer()
            w.write(TimelineEvent(name=name, kind=kind, start_ts_ms=start_ms, end_ts_ms=end_ms, outcome=outcome,
                                  detail=detail, condition=condition or None, condition_held=condition_held,
                                  condition_checked_ts_ms=condition_checked_ts_ms))
            w.flush()

    def bootstrap_for(self, cluster: str) -> str:
        """Where applications on ``cluster`` bootstrap: the stable address while it resolves
        there, else the cluster's own brokers. The harness's own instruments never use this."""
        a = self.stable_address
        return a.bootstrap if a is not None and a.points_to == cluster else self.env.cluster(cluster).bootstrap

    def security_for(self, cluster: str) -> dict[str, str]:
        """librdkafka security settings of ``cluster`` (also through the stable address: TLS passes a TCP proxy)."""
        return self.env.cluster(cluster).security_config()

    def all_replicators(self) -> list[ReplicatorAdapter]:
        return [self.replicator, *self.retired_replicators]

    def elapsed(self) -> float:
        return time.monotonic() - self.load_started_at if self.load_started_at else 0.0
