"""Capacity sweeps: run a drill once per parameter combination and find where throughput stops growing.

Each point is a full drill (real clusters, WAN link, replicator, load) with the parameters
applied to the drill file; it records replicated throughput, whether lag stayed bounded,
latency, and the CPU the replicator's processes used (from /proc, no psutil). Every point is
appended to ``sweep.jsonl`` as it finishes, so an interrupted sweep keeps what it measured.
The machine's own ceiling (Kafka's ProducerPerformance into the target, a plain consumer on
the source) is measured in the same sweep, and results read as a fraction of it.

Modules: ``params`` (the grid and how a combination changes the drill), ``model`` (what
``sweep.jsonl`` holds), ``measure`` (one point's figures), ``ceiling`` (the machine's),
``journal`` (the resumable ``sweep.jsonl``), ``knee`` (the knee and the sizing advice),
``table`` (the text table), ``result`` (a sweep's points and ceiling together) and ``run``
(the orchestration). Drawing the plot and writing Allure results is the CLI's job, through
``reports/``: the sweep calls back whatever :class:`harness.tools.sweep.run.SweepReports` it is given.
"""
