"""Where a JVM the project starts keeps its temporary files: a folder of its own in the run.

Kafka's compression libraries (lz4-java, zstd-jni, snappy-java) copy their native library into
the JVM's temporary folder when first used and delete it only on a clean exit. The JVM's default
is the machine's /tmp, so every broker, MirrorMaker or Spark executor a drill killed left a
``liblz4-java-*.so`` there, outside what the drill owns. Given the process's own folder, those
files stay in the run's folder.
"""

from __future__ import annotations

from pathlib import Path


def temp_dir_flag(folder: str | Path) -> str:
    """The JVM option that makes ``folder`` (which must exist) the JVM's temporary folder."""
    return f"-Djava.io.tmpdir={folder}"
