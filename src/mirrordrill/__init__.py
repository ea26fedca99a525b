"""mirrordrill: chaos and failover drills for Kafka cross-cluster replication.

One import name: the repository's top-level folders are this package's subpackages
(``mirrordrill.harness``, ``mirrordrill.loadgen``, ``mirrordrill.primitives``,
``mirrordrill.replicator``, ``mirrordrill.reports``). A checkout keeps them where they are and
links them here (``src/mirrordrill/``); the wheel carries them under ``mirrordrill/``. Nothing is
imported by their bare names: other distributions use them.
"""
