"""A JVM's class-data archive (JDK 13+'s dynamic AppCDS): dumped by one run as it exits, mapped by later starts.

A JVM that maps an archive finds the classes of its class path parsed and verified already, which
spares most of the CPU its start spends loading them: that matters on a 2-core machine that starts
brokers by the dozen. An archive made for another JDK or class path is refused by the JVM,
which then starts without it (``-Xshare:auto``, the default): an archive can leave a start as slow
as before, never make it fail. The archive is named after what the JVM checks (the ``java``
binary, each class-path entry's size and time), so a new JDK or jar set gets a new one.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

# the JVM's own notes about an archive (not mapped, path mismatch) say nothing a user can act on
QUIET = ("-Xlog:cds=off", "-Xlog:cds+dynamic=off")


def map_flags(archive: Path | None) -> list[str]:
    """The options that map ``archive``; none when there is no such file."""
    if archive is None or not archive.is_file():
        return []
    return [f"-XX:SharedArchiveFile={archive}", *QUIET]


def dump_flags(archive: Path) -> list[str]:
    """The options that dump the classes a run loaded into ``archive`` when its JVM exits normally."""
    return [f"-XX:ArchiveClassesAtExit={archive}", *QUIET]


def fingerprint(java: str, classpath: tuple[str | Path, ...]) -> str:
    """Short hash of what decides whether the JVM accepts an archive."""
    h = hashlib.sha256()
    for entry in (Path(java).resolve(), *map(Path, classpath)):
        try:
            st = entry.stat()
            h.update(f"{entry}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
        except OSError:
            h.update(f"{entry}\0missing\n".encode())
    return h.hexdigest()[:12]


@contextmanager
def making(archive: Path) -> Iterator[Path | None]:
    """Hold ``archive``'s lock; yields a temporary path to dump into, or None when it exists already.

    Processes that ask at once wait for one maker; whatever the maker's run left in the temporary
    file becomes the archive only if the run ended normally (the body returned), so a dump cut
    short by a kill never gets mapped."""
    archive.parent.mkdir(parents=True, exist_ok=True)
    with open(archive.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if archive.is_file():
            yield None
            return
        tmp = archive.with_name(f"{archive.name}.{os.getpid()}.tmp")
        try:
            yield tmp
            if tmp.is_file() and tmp.stat().st_size > 0:
                os.replace(tmp, archive)
        finally:
            tmp.unlink(missing_ok=True)


class LazyArchive:
    """An archive made by ``make`` (given the temporary path to dump into) the first time its flags
    are asked for; a failed making is logged once and the JVMs start without an archive."""

    def __init__(self, path: Path, make: Callable[[Path], None], log: Callable[[str], None]):
        self.path, self._make, self._log = path, make, log
        self._tried = False

    def flags(self) -> list[str]:
        if not self._tried:
            self._tried = True
            try:
                with making(self.path) as tmp:
                    if tmp is not None:
                        self._make(tmp)
            except Exception as e:  # only a speed-up: everything works without it
                self._log(f"no class-data archive {self.path.name} ({type(e).__name__}: {e}); JVMs start without one")
        return map_flags(self.path)
