"""History files: exact round trips, buffering, torn last lines, and refusal of corruption."""

from __future__ import annotations

import threading

import pytest

from mirrordrill.loadgen.histories.kinds import (
    ACKED_SENDS,
    END_OFFSETS,
    KINDS,
    PROCESSED_RECORDS,
    TARGET_RECORDS,
    TIMELINE_EVENTS,
    UNCERTAIN_SENDS,
    history_files,
    history_path,
)
from mirrordrill.loadgen.histories.reader import (
    HistoryFormatError,
    TornLine,
    load_history,
    read_rows,
    valid_prefix_length,
)
from mirrordrill.loadgen.histories.records import (
    ACKED_SEND_FIELDS,
    LAG_SAMPLE_FIELDS,
    PROCESSED_RECORD_FIELDS,
    TARGET_RECORD_FIELDS,
    TIMELINE_EVENT_FIELDS,
    UNCERTAIN_SEND_FIELDS,
    AckedSend,
    LagSample,
    ProcessedRecord,
    TargetRecord,
    TimelineEvent,
    UncertainSend,
)
from mirrordrill.loadgen.histories.writer import HistoryWriter, TornHistoryError

ACKED = [AckedSend("A", "orders", 0, 41, "p-1", 7, 1000, 1003, 120, 4294967295),
         AckedSend("A", "orders", 2, 0, "p-2", 0, 1001, 1010, 1, 0)]
UNCERTAIN = [UncertainSend("A", "orders", "p-1", 8, 1004, "Local: Message timed out"),
             UncertainSend("A", "orders", "p-1", 9, 1005, 'broker said "no", twice'),
             UncertainSend("A", "orders", "p-1", 10, 1006, "")]
TARGET = [TargetRecord("B", "A.orders", 0, 12, "p-1", 7, 1100, True, 4294967295),
          TargetRecord("B", "A.orders", 0, 13, "p-1", 7, 1101, False, 17)]
PROCESSED = [ProcessedRecord("billing", "B", "A.orders", 0, 12, "p-1", 7, 1200)]
LAG = [LagSample(1000, "A", "orders", 0, 42), LagSample(1000, "B", "A.orders", 0, 13)]
TIMELINE = [TimelineEvent("kill broker 1", "kill", 1000, 2000, "ok", "pid 123, signal 9"),
            TimelineEvent("failover", "failover", 3000, None, "running", 'step "drain"')]

CASES = [
    (ACKED_SENDS, ACKED),
    (UNCERTAIN_SENDS, UNCERTAIN),
    (TARGET_RECORDS, TARGET),
    (PROCESSED_RECORDS, PROCESSED),
    (END_OFFSETS, LAG),
    (TIMELINE_EVENTS, TIMELINE),
]


def test_fields_are_the_documented_contract():
    assert ACKED_SEND_FIELDS == ("cluster", "topic", "partition", "offset", "producer_id",
                                 "seq", "send_ts_ms", "ack_ts_ms", "size_bytes", "checksum")
    assert UNCERTAIN_SEND_FIELDS == ("cluster", "topic", "producer_id", "seq",
                                     "send_ts_ms", "error")
    assert TARGET_RECORD_FIELDS == ("cluster", "topic", "partition", "offset",
                                    "producer_id", "seq", "seen_ts_ms", "checksum_ok",
                                    "checksum")
    assert PROCESSED_RECORD_FIELDS == ("group", "cluster", "topic", "partition", "offset",
                                       "producer_id", "seq", "processed_ts_ms")
    assert LAG_SAMPLE_FIELDS == ("ts_ms", "cluster", "topic", "partition", "end_offset")
    assert TIMELINE_EVENT_FIELDS == ("name", "kind", "start_ts_ms", "end_ts_ms",
                                     "outcome", "detail", "condition", "condition_held",
                                     "condition_checked_ts_ms")


def test_rows_are_frozen_and_slotted():
    with pytest.raises(AttributeError):
        ACKED[0].offset = 1  # type: ignore[misc]  # the assignment the test expects refused
    assert not hasattr(ACKED[0], "__dict__")


@pytest.mark.parametrize("kind,rows", CASES, ids=[kind.name for kind, _ in CASES])
def test_round_trip(tmp_path, kind, rows):
    path = tmp_path / "h.csv"
    with HistoryWriter(kind, path) as w:
        w.write(rows[0])
        w.write_many(rows[1:])
    assert read_rows(kind, [path]) == rows
    assert read_rows(kind, path) == rows  # one path works too
    assert path.read_bytes().endswith(b"\n")


def test_exact_text_format(tmp_path):
    path = tmp_path / "t.csv"
    with HistoryWriter(TARGET_RECORDS, path) as w:
        w.write(TARGET[0])
    assert path.read_text() == (TARGET_RECORDS.header  # issue 16: every file starts with a header row
                                + "B,A.orders,0,12,p-1,7,1100,true,4294967295\n")
    path = tmp_path / "e.csv"
    with HistoryWriter(TIMELINE_EVENTS, path) as w:
        w.write_many(TIMELINE)
    assert path.read_text() == (TIMELINE_EVENTS.header +  # the header and the condition columns (issue 16)
                                'kill broker 1,kill,1000,2000,ok,"pid 123, signal 9",,,\n'
                                'failover,failover,3000,,running,"step ""drain""",,,\n')


def test_line_breaks_in_free_text_stay_on_one_line(tmp_path):
    path = tmp_path / "u.csv"
    with HistoryWriter(UNCERTAIN_SENDS, path) as w:
        w.write(UncertainSend("A", "t", "p", 1, 5, "first\nsecond\r\nthird\rfourth"))
    assert path.read_text().count("\n") == 2  # the header row and the record
    assert read_rows(UNCERTAIN_SENDS, path)[0].error == "first\\nsecond\\nthird\\nfourth"


def test_identifiers_that_need_quotes_round_trip(tmp_path):
    row = AckedSend('dc "east", 1', "t", 0, 0, "p,q", 1, 1, 2, 3, 4)
    path = tmp_path / "a.csv"
    with HistoryWriter(ACKED_SENDS, path) as w:
        w.write(row)
    assert read_rows(ACKED_SENDS, path) == [row]


def test_identifier_with_line_break_is_refused(tmp_path):
    with HistoryWriter(ACKED_SENDS, tmp_path / "a.csv") as w:
        with pytest.raises(ValueError, match="line break"):
            w.write(AckedSend("A", "t\n", 0, 0, "p", 1, 1, 2, 3, 4))


def test_wrong_types_are_refused(tmp_path):
    with HistoryWriter(TARGET_RECORDS, tmp_path / "t.csv") as w:
        with pytest.raises(TypeError):
            w.write(TargetRecord("B", "t", 0, 0, "p", 1, 1, 1, 4))  # type: ignore[arg-type]  # the wrong kind under test
        with pytest.raises(ValueError):
            w.write(TargetRecord("B", "t", 0, 0.5, "p", 1, 1, True, 4))  # type: ignore[arg-type]  # a float offset under test


def test_buffered_until_flush_and_flush_writes_whole_lines(tmp_path):
    path = tmp_path / "a.csv"
    w = HistoryWriter(ACKED_SENDS, path)
    w.write(ACKED[0])
    assert path.read_bytes() == ACKED_SENDS.header.encode()  # the header row only
    w.flush()
    assert read_rows(ACKED_SENDS, path) == ACKED[:1]
    w.write(ACKED[1])
    assert read_rows(ACKED_SENDS, path) == ACKED[:1]
    w.close()
    assert read_rows(ACKED_SENDS, path) == ACKED
    w.close()  # idempotent
    with pytest.raises(ValueError, match="closed"):
        w.write(ACKED[0])


def test_full_buffer_is_handed_over_in_whole_lines(tmp_path):
    path = tmp_path / "a.csv"
    with HistoryWriter(ACKED_SENDS, path, buffer_bytes=100) as w:
        for i in range(50):
            w.write(AckedSend("A", "t", 0, i, "p", i, i, i, 1, i))
            data = path.read_bytes()
            assert data == b"" or data.endswith(b"\n")
        assert len(read_rows(ACKED_SENDS, path)) >= 45
        assert w.rows_written == 50
    assert len(read_rows(ACKED_SENDS, path)) == 50


def test_threads_never_interleave_lines(tmp_path):
    path = tmp_path / "a.csv"
    with HistoryWriter(ACKED_SENDS, path, buffer_bytes=512) as w:
        def produce(producer):
            for i in range(2000):
                w.write(AckedSend("A", "t", 0, i, producer, i, i, i, 1, i))
        threads = [threading.Thread(target=produce, args=(f"p{n}",)) for n in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    rows = read_rows(ACKED_SENDS, path)
    assert sorted((r.producer_id, r.seq) for r in rows) == sorted(
        (f"p{n}", i) for n in range(4) for i in range(2000))


def test_appends_to_an_existing_file(tmp_path):
    path = tmp_path / "a.csv"
    with HistoryWriter(ACKED_SENDS, path) as w:
        w.write(ACKED[0])
    with HistoryWriter(ACKED_SENDS, path) as w:
        w.write(ACKED[1])
    assert read_rows(ACKED_SENDS, path) == ACKED


@pytest.mark.parametrize("tail", [b"A,orders,1,5", b"A,orders,1,5,p-3,2,1,2,3,12", b"A"])
def test_torn_last_line_is_skipped_and_counted(tmp_path, tail):
    path = tmp_path / "a.csv"
    with HistoryWriter(ACKED_SENDS, path) as w:
        w.write_many(ACKED)
    with open(path, "ab") as f:
        f.write(tail)  # a crash mid-write; the second tail even parses as a record
    read = load_history(ACKED_SENDS, [path])
    assert read.rows == ACKED
    assert read.truncated == 1
    assert read.torn == (TornLine(str(path), 4, tail.decode()),)  # line 1 is the header row
    assert read_rows(ACKED_SENDS, path) == ACKED


def test_torn_file_without_any_complete_line(tmp_path):
    path = tmp_path / "a.csv"
    path.write_bytes(b"A,orders,0")
    read = load_history(ACKED_SENDS, path)
    assert read.rows == [] and read.truncated == 1


def test_many_files_and_empty_files(tmp_path):
    paths = []
    for n, row in enumerate(ACKED):
        paths.append(tmp_path / f"a{n}.csv")
        with HistoryWriter(ACKED_SENDS, paths[-1]) as w:
            w.write(row)
    (tmp_path / "empty.csv").write_bytes(b"")
    paths.append(tmp_path / "empty.csv")
    assert read_rows(ACKED_SENDS, paths) == ACKED


def test_appending_after_a_torn_record_is_refused(tmp_path):
    path = tmp_path / "a.csv"
    path.write_bytes(b"A,orders,0,1,p,1,1,2,3,4\nA,ord")
    with pytest.raises(TornHistoryError, match="torn"):
        HistoryWriter(ACKED_SENDS, path)
    assert path.read_bytes() == b"A,orders,0,1,p,1,1,2,3,4\nA,ord"  # evidence untouched


@pytest.mark.parametrize("line", [
    "A,orders,0,1,p,1,1,2,3",            # a field short
    "A,orders,0,1,p,1,1,2,3,4,5",        # a field too many
    "A,orders,zero,1,p,1,1,2,3,4",       # not an integer
    'A,"orders,0,1,p,1,1,2,3,4',         # unbalanced quote
])
def test_a_bad_complete_line_is_an_error_not_a_skip(tmp_path, line):
    path = tmp_path / "a.csv"
    path.write_text(f"A,orders,0,1,p,1,1,2,3,4\n{line}\nA,orders,0,2,p,2,1,2,3,4\n")
    with pytest.raises(HistoryFormatError, match=r"a\.csv:2"):
        read_rows(ACKED_SENDS, path)


def test_bad_boolean_is_an_error(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("B,t,0,1,p,1,5,True,4\n")
    with pytest.raises(HistoryFormatError):
        read_rows(TARGET_RECORDS, path)


def test_history_paths(tmp_path):
    a = history_path(tmp_path, ACKED_SENDS, "loadgen-1")
    b = history_path(tmp_path, "acked", "loadgen-2")
    assert a.name == "acked.loadgen-1.csv"
    for p in (b, a, history_path(tmp_path, TARGET_RECORDS, "observer")):
        p.write_text("")
    assert history_files(tmp_path, ACKED_SENDS) == [a, b]
    assert history_path(tmp_path, "end_offsets").name.startswith("end_offsets.")
    with pytest.raises(ValueError):
        history_path(tmp_path, "end_offsets", "../x")


def test_valid_prefix_length(tmp_path):
    path = tmp_path / "x.csv"
    path.write_bytes(b"")
    assert valid_prefix_length(path) == (0, 0)
    path.write_bytes(b"a\nbb\nc")
    assert valid_prefix_length(path) == (5, 6)
    path.write_bytes(b"a\n" + b"x" * 200_000)
    assert valid_prefix_length(path) == (2, 200_002)


def test_spark_schemas_match_fields():
    from pyspark.sql import types as T

    for kind in KINDS.values():
        schema = kind.spark_schema()
        assert tuple(schema.fieldNames()) == kind.fields
    assert ACKED_SENDS.spark_schema()["checksum"].dataType == T.LongType()
    assert ACKED_SENDS.spark_schema()["partition"].dataType == T.IntegerType()
    assert TARGET_RECORDS.spark_schema()["checksum_ok"].dataType == T.BooleanType()
    assert TIMELINE_EVENTS.spark_schema()["end_ts_ms"].dataType == T.LongType()
    for kind in (UNCERTAIN_SENDS, PROCESSED_RECORDS, END_OFFSETS):
        assert isinstance(kind.spark_schema(), T.StructType)


def test_every_file_starts_with_its_header_row_and_reads_back(tmp_path):
    path = tmp_path / "a.csv"
    with HistoryWriter(ACKED_SENDS, path) as w:
        w.write_many(ACKED)
    first = path.read_text().splitlines()[0]
    assert first == "cluster,topic,partition,offset,producer_id,seq,send_ts_ms,ack_ts_ms,size_bytes,checksum"
    with HistoryWriter(ACKED_SENDS, path) as w:  # appending does not repeat it
        w.write(ACKED[0])
    assert path.read_text().count("cluster,topic") == 1
    assert read_rows(ACKED_SENDS, path) == [*ACKED, ACKED[0]]


def test_end_offsets_files_are_named_for_what_they_hold(tmp_path):
    from mirrordrill.loadgen.histories.kinds import END_OFFSETS
    assert history_path(tmp_path, END_OFFSETS, "x").name == "end_offsets.x.csv"


def test_timeline_condition_round_trip(tmp_path):
    from mirrordrill.loadgen.histories.kinds import TIMELINE_EVENTS
    from mirrordrill.loadgen.histories.records import TimelineEvent
    rows = [TimelineEvent("kill", "kill_broker", 1, 2, "ok", "done", "lag <= 0 on primary->dr", False, 5),
            TimelineEvent("heal", "heal", 3, None, "ok", "")]
    path = tmp_path / "t.csv"
    with HistoryWriter(TIMELINE_EVENTS, path) as w:
        w.write_many(rows)
    assert read_rows(TIMELINE_EVENTS, path) == rows
