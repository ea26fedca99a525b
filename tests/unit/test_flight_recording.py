"""run --jfr's pure parts: the JVM options, the ranking of a recording's counts, the window, the refusals."""

from __future__ import annotations

from pathlib import Path

import pytest

from mirrordrill.harness.drill.flight_recordings import first_copy_ms, profile_line
from mirrordrill.harness.drill.replicators import RunInputs, replicator_class
from mirrordrill.harness.lab.spark.deployment import SparkDeployment
from mirrordrill.primitives.jvm_flight_recording import (
    FLIGHT_RECORDING_ENV,
    SAMPLE_PERIOD_MS,
    flags_from_environment,
    profile_from_counts,
    recording_flags,
)

COUNTS = [
    "samples\tExecutor task launch worker-#\t\t80",
    "samples\tmain\t\t20",
    "self\tExecutor task launch worker-#\tKafkaProducer.send\t30",
    "self\tExecutor task launch worker-#\tBigEndianLong.call\t50",
    "total\tExecutor task launch worker-#\tTask.run\t80",
    "total\tExecutor task launch worker-#\tKafkaProducer.send\t30",
    "self\tmain\tObject.wait\t20",
    "waited_ms\tExecutor task launch worker-#\tKafkaDataConsumer.fetch\t900",
    "waited_ms\tExecutor task launch worker-#\tKafkaProducer.doSend\t1200",
    "native\tExecutor task launch worker-#\tEPoll.wait <- NetworkClient.poll\t7",
    "cpu\tjvm\t\t0.61234",
    "cpu\tmachine\t\t0.9",
    "a line of something else",
]


def test_the_options_record_into_the_file_with_the_settings_written_beside_it(tmp_path):
    flags = recording_flags(tmp_path / "node" / "flight.jfr")
    settings = tmp_path / "node" / "flight.jfc"
    assert flags[0] == f"-XX:StartFlightRecording:filename={tmp_path / 'node' / 'flight.jfr'},settings={settings},dumponexit=true"
    text = settings.read_text()
    assert f'<event name="jdk.ExecutionSample"><setting name="enabled">true</setting><setting name="period">{SAMPLE_PERIOD_MS} ms' in text
    for event in ("jdk.NativeMethodSample", "jdk.ThreadPark", "jdk.JavaMonitorWait", "jdk.CPULoad"):
        assert f'<event name="{event}"><setting name="enabled">true</setting>' in text
    assert any(f.startswith("-XX:FlightRecorderOptions:stackdepth=") for f in flags)


@pytest.mark.parametrize("name", ["with space", "with,comma"])
def test_a_path_the_option_syntax_would_split_is_refused(tmp_path, name):
    with pytest.raises(ValueError, match="no spaces or commas"):
        recording_flags(tmp_path / name / "flight.jfr")


def test_the_environment_asks_for_a_recording_only_when_set(tmp_path):
    assert flags_from_environment({}) == []
    assert flags_from_environment({FLIGHT_RECORDING_ENV: str(tmp_path / "f.jfr")})[0].startswith(
        "-XX:StartFlightRecording:filename=")


def test_counts_are_ranked_per_thread_kind_with_shares():
    profile = profile_from_counts("flight.jfr", COUNTS, from_ms=1234)
    assert profile.samples == 100 and profile.jvm_cpu == 0.6123 and profile.machine_cpu == 0.9
    workers, main = profile.threads
    assert (workers.kind, workers.samples, workers.share) == ("Executor task launch worker-#", 80, 0.8)
    assert [(m.method, m.samples, m.share) for m in workers.self_methods] == [
        ("BigEndianLong.call", 50, 0.625), ("KafkaProducer.send", 30, 0.375)]
    assert [m.method for m in workers.total_methods] == ["Task.run", "KafkaProducer.send"]
    assert main.self_methods[0].share == 1.0
    # where it waited, longest first, and where it sat in native code
    assert list(workers.waited_ms.items()) == [("KafkaProducer.doSend", 1200), ("KafkaDataConsumer.fetch", 900)]
    assert workers.native == {"EPoll.wait <- NetworkClient.poll": 7} and main.waited_ms == {}
    as_dict = profile.as_dict()
    assert as_dict["from_ms"] == 1234 and as_dict["threads"][0]["self"][0]["method"] == "BigEndianLong.call"
    assert profile_line("replicator/pyspark/dr", profile) == (
        "flight recording replicator/pyspark/dr: 100 samples, JVM 61% of the machine's CPU; "
        "'Executor task launch worker-#' 80% (in BigEndianLong.call 62%); 'main' 20% (in Object.wait 100%)")


def test_the_window_starts_at_the_first_record_copied_by_any_start():
    starts = [{"started_at_ms": 10_000, "first_record_s": 8.2}, {"started_at_ms": 30_000, "first_record_s": 1.0},
              {"started_at_ms": 5_000, "first_record_s": None}]
    assert first_copy_ms(starts) == 18_200
    assert first_copy_ms([{"started_at_ms": 5_000}]) is None


def test_which_replicators_can_be_recorded_and_why_not():
    def run(master: str) -> RunInputs:
        return RunInputs(artifacts=None, spark=lambda: SparkDeployment(master=master), base_dir=Path("."),
                         flight_recording=True)
    assert replicator_class("pyspark").flight_recording_refusal(run("local")) is None
    assert "executors copy the records" in replicator_class("pyspark").flight_recording_refusal(run("standalone"))
    assert replicator_class("mirrormaker2").flight_recording_refusal(run("local")) is None
    assert "has none it can record" in replicator_class("command").flight_recording_refusal(run("local"))
