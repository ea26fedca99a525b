"""The columnar reader reads history files exactly as the row reader does: the same values, the
same torn last lines skipped and reported, the same malformed lines refused."""

from __future__ import annotations

import pytest

from mirrordrill.loadgen.histories.columnar import frame_of, load_frame, read_frame
from mirrordrill.loadgen.histories.kinds import ACKED_SENDS, TARGET_RECORDS
from mirrordrill.loadgen.histories.reader import HistoryFormatError, load_history, read_rows
from mirrordrill.loadgen.histories.writer import HistoryWriter
from tests.unit.test_histories import ACKED, CASES


@pytest.mark.parametrize("kind,rows", CASES, ids=[kind.name for kind, _ in CASES])
def test_same_values_as_the_row_reader(tmp_path, kind, rows):
    path = tmp_path / "h.csv"
    with HistoryWriter(kind, path) as w:
        w.write_many(rows)
    frame = read_frame(kind, path)
    assert frame.equals(frame_of(kind, read_rows(kind, path)))
    assert frame.to_dicts() == [{f: getattr(r, f) for f in kind.fields} for r in rows]


def test_torn_last_line_is_skipped_and_reported_alike(tmp_path):
    path = tmp_path / "a.csv"
    with HistoryWriter(ACKED_SENDS, path) as w:
        w.write_many(ACKED)
    with open(path, "ab") as f:
        f.write(b"A,orders,1,5,p-3,2,1,2,3,12")  # parses as a record, but has no line end
    read = load_frame(ACKED_SENDS, path)
    assert read.frame.height == len(ACKED)
    assert read.torn == load_history(ACKED_SENDS, path).torn


def test_files_without_header_empty_files_and_many_files(tmp_path):
    (tmp_path / "bare.csv").write_text("A,orders,0,41,p-1,7,1000,1003,120,4294967295\n")
    (tmp_path / "empty.csv").write_bytes(b"")
    paths = [tmp_path / "bare.csv", tmp_path / "empty.csv"]
    assert read_frame(ACKED_SENDS, paths).equals(frame_of(ACKED_SENDS, read_rows(ACKED_SENDS, paths)))
    assert read_frame(ACKED_SENDS, []).height == 0


@pytest.mark.parametrize("line", [
    "A,orders,0,1,p,1,1,2,3",            # a field short
    "A,orders,0,1,p,1,1,2,3,4,5",        # a field too many
    "A,orders,zero,1,p,1,1,2,3,4",       # not an integer
    "A,orders,0,,p,1,1,2,3,4",           # a required number empty
    "",                                  # a blank line
])
def test_a_bad_complete_line_is_an_error_not_a_skip(tmp_path, line):
    path = tmp_path / "a.csv"
    path.write_text(f"A,orders,0,1,p,1,1,2,3,4\n{line}\nA,orders,0,2,p,2,1,2,3,4\n")
    with pytest.raises(HistoryFormatError, match=r"a\.csv"):
        read_frame(ACKED_SENDS, path)


@pytest.mark.parametrize("value", ["True", "yes", "1"])
def test_bad_boolean_is_an_error(tmp_path, value):
    path = tmp_path / "t.csv"
    path.write_text(f"B,t,0,1,p,1,5,{value},4\n")
    with pytest.raises(HistoryFormatError):
        read_frame(TARGET_RECORDS, path)
