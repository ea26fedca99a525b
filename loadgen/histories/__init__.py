"""On-disk histories: row schemas, buffered append-writers and tolerant readers.

Format, shared by every kind: UTF-8 CSV whose first line is a header row (the kind's field
names, written when the file is created), then one record per physical line,
``\\n`` line ends, RFC 4180 quoting (a field holding ``,`` or ``"`` is quoted, quotes are
doubled). Every timestamp is epoch milliseconds (fields named ``*_ts_ms``/``ts_ms``).
Integers are decimal, booleans ``true``/``false``, a missing optional integer is an empty field.
Line breaks inside free text (``error``, ``detail``, ...) are written as the two characters
``\\n`` so that a record never spans lines: that is what lets a reader
tell a record torn by a crash (the bytes after the last ``\\n``) from a complete one.

One file per history kind per writer process (see :func:`loadgen.histories.kinds.history_path`). A reader skips a
torn last line and counts it; any other malformed line is an error, never silently dropped.
Spark reads the same files (``header`` true) with ``spark.read.options(**SPARK_CSV_OPTIONS).csv(paths,
schema=ACKED_SENDS.spark_schema())``; a torn last line needs the checker's loader
(``harness.drill.checker.spark_io``), which drops it exactly as the Python readers do.

Modules: ``records`` (the row types), ``codec`` (a row to a CSV line and back), ``kinds`` (each
kind's name, fields, codec and Spark types, and where its files are), ``writer`` (the one
append-writer, for every kind) and ``reader`` (the tolerant readers).
"""
