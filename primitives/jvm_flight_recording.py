"""A JVM's flight recording (JDK Flight Recorder): started with the JVM, written when it exits, summarized.

What a profile of a replicator needs is where its threads spend their time: execution samples
at a period short enough to give tens of thousands of samples in a minute (JFR's own ``profile``
settings sample every 10 ms), with stacks deep enough to reach from a Spark task's run loop to the
method it is in. The settings file written beside the recording turns on only that and the
JVM's CPU load, so the recording costs little besides the sampling itself.

A recording is written when the JVM exits normally (``dumponexit``): a JVM killed with SIGKILL
leaves none. ``summarize`` counts the samples with the JDK's own reader
(``jvm/FlightRecordingSummary.java``, run as a source file) and ranks them per thread kind.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FLIGHT_RECORDING_ENV = "MIRRORDRILL_JFR"  # the recording's path, for a JVM started by a child process
SAMPLE_PERIOD_MS = 1  # JDK 17 took ~330 samples a second of a busy thread at 1 ms (~45 at 10 ms); at most 5 threads a period
NATIVE_PERIOD_MS = 10  # a thread in native code (a socket read, epoll) is sampled apart, as JFR's profile settings do
WAIT_THRESHOLD_MS = 1  # parks and monitor waits this long or longer are kept: where a copying thread waits for the next record
STACK_DEPTH = 256  # a Spark task's stacks run 100-150 frames from its run loop to the record's method
SUMMARY_SOURCE = Path(__file__).with_name("jvm") / "FlightRecordingSummary.java"
TOP_SELF_METHODS = 30
TOP_TOTAL_METHODS = 60  # the first dozen or two are the run loop every sample of the thread shares
TOP_WAIT_SITES = 15
TOP_THREAD_KINDS = 12

def _settings_xml(sample_ms: int) -> str:
    """A JFR settings file (``.jfc``) that turns on only what a summary reads."""
    events = {
        "jdk.ExecutionSample": {"period": f"{sample_ms} ms"},
        "jdk.NativeMethodSample": {"period": f"{NATIVE_PERIOD_MS} ms"},
        "jdk.ThreadPark": {"stackTrace": "true", "threshold": f"{WAIT_THRESHOLD_MS} ms"},
        "jdk.JavaMonitorWait": {"stackTrace": "true", "threshold": f"{WAIT_THRESHOLD_MS} ms"},
        "jdk.CPULoad": {"period": "1 s"},
        "jdk.GarbageCollection": {"threshold": "0 ms"},
    }
    lines = ['<?xml version="1.0" encoding="UTF-8"?>',
             '<configuration version="2.0" label="mirrordrill" description="samples, waits and CPU load">']
    for event, settings in events.items():
        inner = "".join(f'<setting name="{k}">{v}</setting>' for k, v in {"enabled": "true", **settings}.items())
        lines.append(f'  <event name="{event}">{inner}</event>')
    return "\n".join([*lines, "</configuration>", ""])


def recording_flags(recording: Path, sample_ms: int = SAMPLE_PERIOD_MS) -> list[str]:
    """The JVM options that record into ``recording`` until the JVM exits; writes the settings beside it.

    The options travel through option strings split at spaces (``spark.driver.extraJavaOptions``)
    and at commas (JFR's own list), so a path with either is refused."""
    recording = Path(recording).resolve()
    if any(c.isspace() or c == "," for c in str(recording)):
        raise ValueError(f"flight recording path {recording}: no spaces or commas allowed (JVM option syntax)")
    recording.parent.mkdir(parents=True, exist_ok=True)
    settings = recording.with_suffix(".jfc")
    settings.write_text(_settings_xml(sample_ms))
    return [f"-XX:StartFlightRecording:filename={recording},settings={settings},dumponexit=true",
            f"-XX:FlightRecorderOptions:stackdepth={STACK_DEPTH}",
            "-Xlog:jfr+startup=error"]  # its start-up notes ("use jcmd ... JFR.dump") would go into the process's log


def flags_from_environment(env: Mapping[str, str]) -> list[str]:
    """The recording options ``$MIRRORDRILL_JFR`` asks for (none when unset)."""
    setting = env.get(FLIGHT_RECORDING_ENV, "").strip()
    return recording_flags(Path(setting)) if setting else []


@dataclass(frozen=True)
class MethodCount:
    method: str
    samples: int
    share: float  # of the thread kind's samples


@dataclass(frozen=True)
class ThreadKindProfile:
    """One kind of thread (its name with the numbers taken out): where its samples were."""

    kind: str
    samples: int
    share: float  # of the recording's samples
    self_methods: list[MethodCount]  # the method a sample was in
    total_methods: list[MethodCount]  # a method anywhere on the sample's stack
    waited_ms: dict[str, int] = field(default_factory=dict)  # where it parked or waited, by the site that asked
    native: dict[str, int] = field(default_factory=dict)  # its samples in native code, by method <- caller

    def as_dict(self) -> dict[str, Any]:
        return {"thread_kind": self.kind, "samples": self.samples, "share": self.share,
                "self": [vars(m) for m in self.self_methods], "total": [vars(m) for m in self.total_methods],
                "waited_ms": self.waited_ms, "native_samples": self.native}


@dataclass(frozen=True)
class RecordingProfile:
    recording: str
    samples: int
    jvm_cpu: float | None  # mean fraction of the machine's cores the JVM used
    machine_cpu: float | None
    threads: list[ThreadKindProfile]
    from_ms: int | None = None  # the samples counted began then (epoch ms); None: the whole recording

    def as_dict(self) -> dict[str, Any]:
        return {"recording": self.recording, "sample_period_ms": SAMPLE_PERIOD_MS, "from_ms": self.from_ms,
                "samples": self.samples,
                "jvm_cpu": self.jvm_cpu, "machine_cpu": self.machine_cpu,
                "threads": [t.as_dict() for t in self.threads]}


def _ranked(counts: Mapping[str, int], of: int, top: int) -> list[MethodCount]:
    ordered = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:top]
    return [MethodCount(m, n, round(n / of, 4) if of else 0.0) for m, n in ordered]


def _largest(counts: Mapping[str, int]) -> dict[str, int]:
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:TOP_WAIT_SITES])


def profile_from_counts(recording: str, lines: Iterable[str], from_ms: int | None = None) -> RecordingProfile:
    """Rank the summarizer's counts (``FlightRecordingSummary.java``'s output lines)."""
    samples: dict[str, int] = {}
    methods: dict[tuple[str, str], dict[str, int]] = {}
    cpu: dict[str, float] = {}
    for line in lines:
        parts = line.rstrip("\n").split("\t")
        if len(parts) != 4:
            continue
        what, kind, method, value = parts
        if what == "samples":
            samples[kind] = int(value)
        elif what in ("self", "total", "waited_ms", "native"):
            methods.setdefault((what, kind), {})[method] = int(value)
        elif what == "cpu":
            cpu[kind] = round(float(value), 4)
    everything = sum(samples.values())
    threads = [ThreadKindProfile(kind, n, round(n / everything, 4),
                                 _ranked(methods.get(("self", kind), {}), n, TOP_SELF_METHODS),
                                 _ranked(methods.get(("total", kind), {}), n, TOP_TOTAL_METHODS),
                                 _largest(methods.get(("waited_ms", kind), {})), _largest(methods.get(("native", kind), {})))
               for kind, n in sorted(samples.items(), key=lambda kv: (-kv[1], kv[0]))[:TOP_THREAD_KINDS]]
    return RecordingProfile(recording, everything, cpu.get("jvm"), cpu.get("machine"), threads, from_ms)


def summarize(recording: Path, java: str = "java", from_ms: int | None = None,
              timeout_s: float = 600.0) -> RecordingProfile:
    """Count ``recording``'s samples (those from epoch ms ``from_ms`` on, when given) with the JDK's
    reader and rank them; raises when the JDK cannot read it."""
    argv = [java, str(SUMMARY_SOURCE), str(recording), *([str(from_ms)] if from_ms else [])]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s)
    if done.returncode != 0:
        raise RuntimeError(f"cannot read flight recording {recording}: {done.stderr.strip()[-500:]}")
    return profile_from_counts(Path(recording).name, done.stdout.splitlines(), from_ms)
