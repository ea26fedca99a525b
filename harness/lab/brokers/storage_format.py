"""Formatting many brokers' storage in one JVM: Kafka's ``StorageTool``, run by a small main class of ours.

Every broker of a lab needs ``StorageTool format`` before its first start. One JVM per broker
loaded the same Kafka and Scala classes once for each, and a suite starts a few hundred brokers
on two cores; ``FormatStorages`` (resources/FormatStorages.java) runs StorageTool for each of
them in turn, in one JVM. Kafka has no command that formats several brokers, so the class is
ours: javac from the JDK that runs the brokers compiles it once into the cache folder, keyed by
its source and that JDK. Where there is no javac (a JRE), each broker is formatted by its own
StorageTool run, as before.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from mirrordrill.primitives.bootstrap import mirrordrill_home
from mirrordrill.primitives.process import child_environment

SOURCE = Path(__file__).resolve().parent.parent / "resources" / "FormatStorages.java"
MAIN_CLASS = "FormatStorages"


def format_classes(java: str, classpath: tuple[str | Path, ...]) -> Path | None:
    """The folder holding the compiled ``FormatStorages`` for ``java``'s JDK; None without a javac."""
    javac = Path(java).resolve().parent / "javac"
    if not javac.is_file():
        return None
    key = hashlib.sha256(SOURCE.read_bytes() + str(javac).encode()).hexdigest()[:12]
    dest = mirrordrill_home() / "jvm-tools" / f"format-storages-{key}"
    if (dest / f"{MAIN_CLASS}.class").is_file():
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    # compiled beside the destination and renamed into place: processes that compile at once
    # each finish their own copy, the first rename wins and the others drop theirs
    tmp = Path(tempfile.mkdtemp(prefix=".format-storages-", dir=dest.parent))
    try:
        proc = subprocess.run([str(javac), "-nowarn", "-d", str(tmp), "-cp", ":".join(map(str, classpath)),
                               str(SOURCE)], capture_output=True, text=True, env=child_environment())
        if proc.returncode != 0:
            raise RuntimeError(f"javac {SOURCE.name} failed:\n{proc.stdout}{proc.stderr}")
        try:
            os.rename(tmp, dest)
        except OSError:
            if not (dest / f"{MAIN_CLASS}.class").is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return dest


def format_args(pairs: list[tuple[str, str]]) -> list[str]:
    """``FormatStorages``'s arguments: each broker's cluster id, then its properties file."""
    return [MAIN_CLASS, *(item for pair in pairs for item in pair)]
