"""Spark DataFrames over history files, with torn last lines dropped as the Python
readers drop them (a plain ``spark.read.csv`` would parse a torn line as a record).
Every file starts with its header row: the CSV source skips it (``header`` true), and so
does the torn-file path."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from mirrordrill.loadgen.histories.kinds import SPARK_CSV_OPTIONS, HistoryKind
from mirrordrill.loadgen.histories.reader import Paths, TornLine, as_paths, valid_prefix_length

log = logging.getLogger(__name__)

# from_csv rejects the options that only make sense for whole files.
_LINE_OPTIONS = {k: v for k, v in SPARK_CSV_OPTIONS.items()
                 if k not in ("header", "multiLine", "lineSep")}


@dataclass(frozen=True)
class LoadedHistory:
    """A DataFrame of one history kind, and the torn last lines left out of it."""

    frame: DataFrame
    torn: tuple[TornLine, ...]


def load_history(spark: SparkSession, kind: HistoryKind, paths: Paths) -> LoadedHistory:
    """Read local history files of one kind; files with a torn tail are read whole and cut.

    A torn file (rare: its writer crashed) is read with the ``binaryFile`` source as one
    value, so it must stay under 2 GiB; clean files go through the CSV source.
    """
    clean: list[Path] = []
    torn_files: list[Path] = []
    torn: list[TornLine] = []
    for path in as_paths(paths):
        valid, size = valid_prefix_length(path)
        if valid == size:
            clean.append(path)
            continue
        if valid > 0:  # a file with no complete line has no rows at all
            torn_files.append(path)
        with open(path, "rb") as f:
            body = f.read(valid)
            tail = f.read()
        torn.append(TornLine(str(path), body.count(b"\n") + 1,
                             tail.decode("utf-8", errors="replace")))
        log.warning("%s: skipped a torn last line (%d bytes)", path, size - valid)

    schema = kind.spark_schema()
    frames: list[DataFrame] = []
    if clean:
        frames.append(spark.read.options(**SPARK_CSV_OPTIONS).schema(schema)
                      .csv([str(p.resolve()) for p in clean]))
    if torn_files:
        text = F.decode(F.col("content"), "UTF-8")
        lines = F.split(text, "\n")
        # drop the header row (line 1; a torn file here has at least that one) and the torn tail
        complete = F.slice(lines, 2, F.size(lines) - 2)
        frames.append(
            spark.read.format("binaryFile").load([str(p.resolve()) for p in torn_files])
            .select(F.explode(complete).alias("line"))
            .select(F.from_csv("line", kind.spark_ddl(), _LINE_OPTIONS).alias("r"))
            .select("r.*"))
    if not frames:
        return LoadedHistory(spark.createDataFrame([], schema), ())
    frame = frames[0]
    for other in frames[1:]:
        frame = frame.unionByName(other)
    return LoadedHistory(frame, tuple(torn))
