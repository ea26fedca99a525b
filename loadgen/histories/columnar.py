"""Histories as Polars frames: the same CSV files as :mod:`loadgen.histories.reader`, read column by
column, with the same rules (a torn last line skipped and reported, anything else malformed an
error), and rows already in memory turned into the same frames.

Every integer column is Int64 whatever its Spark type, so sums and differences of timestamps
stay exact; a missing optional field is null, as it is None in a row.
"""

from __future__ import annotations

import io
import logging
from collections.abc import Sequence
from dataclasses import dataclass, fields
from operator import attrgetter
from typing import Any

import polars as pl

from mirrordrill.loadgen.histories.kinds import HistoryKind
from mirrordrill.loadgen.histories.reader import HistoryFormatError, Paths, TornLine, as_paths

log = logging.getLogger(__name__)

_POLARS_TYPES: dict[str, Any] = {"string": pl.String, "int": pl.Int64, "long": pl.Int64,
                                 "boolean": pl.Boolean}


def frame_schema(kind: HistoryKind[Any]) -> dict[str, Any]:
    """Column name -> Polars type of one kind."""
    return {name: _POLARS_TYPES[t] for name, t in zip(kind.fields, kind.spark_types, strict=True)}


def _optional(kind: HistoryKind[Any]) -> set[str]:
    # Fields annotated ``X | None`` may be empty on disk; any other empty number is corruption.
    return {f.name for f in fields(kind.row_type) if "None" in str(f.type)}


def _free_text(kind: HistoryKind[Any]) -> set[str]:
    return {f.name for f in fields(kind.row_type) if str(f.type).startswith("Text")}


def frame_of(kind: HistoryKind[Any], rows: Sequence[Any]) -> pl.DataFrame:
    """Rows of one kind already in memory, as the frame :func:`load_frame` would read."""
    schema = frame_schema(kind)
    if not rows:
        return pl.DataFrame(schema=schema)
    values = attrgetter(*kind.fields)
    return pl.DataFrame([values(r) for r in rows], schema=schema, orient="row")


@dataclass(frozen=True)
class FrameRead:
    """The rows of some files as one frame, and the torn last lines that were skipped."""

    frame: pl.DataFrame
    torn: tuple[TornLine, ...]


def load_frame(kind: HistoryKind[Any], paths: Paths) -> FrameRead:
    """Every file of one kind as one frame; torn last lines skipped and reported, any other
    malformed line a :class:`HistoryFormatError`."""
    frames: list[pl.DataFrame] = []
    torn: list[TornLine] = []
    for path in as_paths(paths):
        with open(path, "rb") as f:
            data = f.read()
        cut = data.rfind(b"\n") + 1
        body, tail = data[:cut], data[cut:]
        lines = body.count(b"\n")
        if tail:
            torn.append(TornLine(str(path), lines + 1, tail.decode("utf-8", errors="replace")))
            log.warning("%s: skipped a torn last line (%d bytes)", path, len(tail))
        frames.append(_parse(kind, str(path), body, lines))
    if not frames:
        return FrameRead(pl.DataFrame(schema=frame_schema(kind)), ())
    return FrameRead(pl.concat(frames, how="vertical"), tuple(torn))


def read_frame(kind: HistoryKind[Any], paths: Paths) -> pl.DataFrame:
    """Every row of one kind in these files (torn last lines skipped), as one frame."""
    return load_frame(kind, paths).frame


def _parse(kind: HistoryKind[Any], path: str, body: bytes, lines: int) -> pl.DataFrame:
    """The complete lines of one file; its header row, when it has one, skipped."""
    schema = frame_schema(kind)
    # Booleans are read as text and checked here: Polars would also take "True" or "TRUE", which
    # the format (and the row reader) refuses.
    booleans = [c for c, t in schema.items() if t == pl.Boolean]
    header = kind.header.encode("utf-8")
    skip = 1 if body.startswith(header) else 0  # files without one (hand-made) are read too
    if lines - skip == 0:
        return pl.DataFrame(schema=schema)
    try:
        frame = pl.read_csv(io.BytesIO(body), has_header=False, skip_lines=skip,
                            schema=schema | dict.fromkeys(booleans, pl.String),
                            quote_char='"', separator=",", empty_string_is_null=False,
                            truncate_ragged_lines=False, raise_if_empty=False)
    except (pl.exceptions.PolarsError, ValueError) as exc:
        raise HistoryFormatError(f"{path}: not {kind.row_type.__name__} records ({exc})") from None
    # Each record is one line (the writer folds line breaks in free text), so a line that is
    # blank or short of fields shows as a missing row or a null where none may be.
    if frame.height != lines - skip:
        raise HistoryFormatError(f"{path}: {lines - skip} lines but {frame.height} "
                                 f"{kind.row_type.__name__} records")
    for c in booleans:
        if not frame[c].is_in(["true", "false", ""]).all():
            raise HistoryFormatError(f"{path}: {kind.row_type.__name__} records with {c} not true or false")
    frame = frame.with_columns(pl.when(pl.col(c) == "").then(None).otherwise(pl.col(c) == "true").alias(c)
                               for c in booleans)
    required = [c for c in kind.fields if c not in _optional(kind)]
    missing = [c for c in required if frame[c].null_count()]
    if missing:
        raise HistoryFormatError(f"{path}: {kind.row_type.__name__} records with empty {missing}")
    optional_text = sorted(_optional(kind) & _free_text(kind))
    if optional_text:  # an empty optional text is None in a row
        frame = frame.with_columns(pl.when(pl.col(c) == "").then(None).otherwise(pl.col(c)).alias(c)
                                   for c in optional_text)
    return frame
