"""Idempotent installation of everything mirrordrill runs, into a cache outside the work tree.

First use downloads (Maven Central jars, the Toxiproxy Go module, Allure from npm); later
uses find a ``.complete`` marker and do no network work. Each artifact set lives in a folder
keyed by a hash of the file that pins it, so changing a pin installs afresh beside the old.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mirrordrill.primitives import versions
from mirrordrill.primitives.package_sources import PackageSource, go_source, maven_source, npm_source

# The import root: the checkout, or site-packages in an installed tool (the packages' data files,
# replicator/jvm and reports/allure among them, are in the wheel at the same places).
REPO_ROOT = Path(__file__).resolve().parent.parent
REPLICATOR_JVM_DIR = REPO_ROOT / "replicator" / "jvm"
ALLURE_DIR = REPO_ROOT / "reports" / "allure"
JVM_PROFILES = ("broker", "mirrormaker", "mirrormaker1", "spark-kafka")
MIN_JAVA = 17


class BootstrapError(RuntimeError):
    """A toolchain is missing or a download failed; the message says what to do."""


def checkout_root() -> Path | None:
    """The checkout this code runs from (the wrapper, an editable install), or None in an installed tool."""
    try:
        # site-packages may hold a stray pyproject.toml of another distribution: the name decides.
        name = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["name"]
    except (OSError, KeyError, TypeError, tomllib.TOMLDecodeError):
        return None
    return REPO_ROOT if name == "mirrordrill" else None


def require_checkout(what: str) -> Path:
    """The checkout's root, or BootstrapError saying in one line that ``what`` needs one."""
    root = checkout_root()
    if root is None:
        raise BootstrapError(f"{what} works on mirrordrill's source checkout (git clone it and use its "
                             f"./mirrordrill); this mirrordrill is installed in {REPO_ROOT}")
    return root


def mirrordrill_home() -> Path:
    """The cache folder: ``$MIRRORDRILL_HOME`` or ``~/.cache/mirrordrill``."""
    return Path(os.environ.get("MIRRORDRILL_HOME") or Path.home() / ".cache" / "mirrordrill")


@dataclass(frozen=True)
class Artifacts:
    """Paths of every installed artifact, as the rest of the harness needs them."""

    java: str
    broker_classpath: tuple[Path, ...]
    mirrormaker_classpath: tuple[Path, ...]
    spark_kafka_jars: tuple[Path, ...]
    replicator_jar: Path
    toxiproxy_server: Path
    allure_cli: Path | None
    mirrormaker1_classpath: tuple[Path, ...] = ()  # Kafka 3.9's core jar and its dependencies


def _digest(*paths: Path) -> str:
    h = hashlib.sha256()
    for p in paths:
        h.update(p.read_bytes())
    return h.hexdigest()[:12]


def _reach(source: PackageSource, also: str = "") -> str:
    """The hint after a failed download: the source the tool used, and where that was set."""
    return (f"Check that {source.url} is reachable{f' {also}' if also else ''} ({source.tool}'s source: "
            f"{source.origin}), then rerun.")


def _require_tool(name: str, why: str, install_hint: str) -> str:
    path = shutil.which(name)
    if not path:
        raise BootstrapError(f"'{name}' is not on PATH; it is needed {why}. {install_hint}")
    return path


class Bootstrap:
    """Installs artifacts on first use and returns their paths; safe to call from many processes."""

    def __init__(self, home: Path | None = None, log: Callable[[str], None] | None = None):
        self.home = home or mirrordrill_home()
        self.log = log or (lambda msg: print(f"mirrordrill: {msg}", file=sys.stderr, flush=True))

    # --- toolchains -------------------------------------------------------------------
    def java(self) -> str:
        """Path of a ``java`` of version 17 or newer."""
        java_home = os.environ.get("JAVA_HOME")
        java = str(Path(java_home) / "bin" / "java") if java_home else shutil.which("java")
        if not java or not Path(java).exists():
            raise BootstrapError(
                "'java' is not on PATH; Kafka, MirrorMaker 2 and Spark need a Java runtime 17+. "
                "Install one (Debian: apt-get install openjdk-17-jre-headless) or set JAVA_HOME."
            )
        out = subprocess.run([java, "-version"], capture_output=True, text=True).stderr
        m = re.search(r'version "(\d+)(?:\.(\d+))?', out)
        major = int(m.group(1)) if m else 0
        if major == 1 and m and m.group(2):
            major = int(m.group(2))
        if major < MIN_JAVA:
            raise BootstrapError(
                f"{java} is Java {major or 'unknown'}; Kafka 4 and Spark 4 need Java {MIN_JAVA}+. "
                "Install a newer JDK and put it first on PATH (or set JAVA_HOME)."
            )
        return java

    # --- JVM artifacts ----------------------------------------------------------------
    def jvm_classpath(self, profile: str) -> tuple[Path, ...]:
        """Jars of one profile of primitives/jvm/pom.xml (broker, mirrormaker, mirrormaker1, spark-kafka)."""
        if profile not in JVM_PROFILES:
            raise ValueError(f"unknown JVM profile {profile!r}; expected one of {JVM_PROFILES}")
        dest = self.home / "jvm" / f"{profile}-{_digest(versions.POM_PATH)}"
        if not (dest / ".complete").exists():
            with self._lock(f"jvm-{profile}"):
                if not (dest / ".complete").exists():
                    self._resolve_maven_profile(profile, dest)
        return tuple(sorted(dest.glob("*.jar")))

    def _resolve_maven_profile(self, profile: str, dest: Path) -> None:
        mvn = _require_tool(
            "mvn", "once, to download Kafka/MirrorMaker/Spark jars from Maven Central",
            "Install Maven 3.8+ (Debian: apt-get install maven).",
        )
        self.java()
        self.log(f"downloading JVM artifacts '{profile}' (Maven, once) into {dest}")
        tmp = Path(tempfile.mkdtemp(prefix=f".{profile}-", dir=self._ensure(dest.parent)))
        cmd = [mvn, "-B", "-q", "-f", str(versions.POM_PATH), "-P", profile,
               "dependency:copy-dependencies", "-DincludeScope=runtime",
               f"-DoutputDirectory={tmp}"]
        self._run(cmd, f"mvn ({profile})", _reach(maven_source()))
        if not any(tmp.glob("*.jar")):
            raise BootstrapError(f"Maven resolved no jars for profile {profile!r}; see {self._log_path(f'mvn ({profile})')}")
        (tmp / ".complete").touch()
        shutil.rmtree(dest, ignore_errors=True)
        tmp.rename(dest)

    # --- the replicator's producer interceptor ----------------------------------------
    def replicator_jar(self) -> Path:
        """The bundled replicator's JVM jar (a producer interceptor), built from replicator/jvm."""
        sources = sorted(REPLICATOR_JVM_DIR.rglob("*.java")) + [REPLICATOR_JVM_DIR / "pom.xml"]
        dest = self.home / "replicator-jvm" / _digest(*sources)
        jar = dest / "mirrordrill-replicator-jvm.jar"
        if not (dest / ".complete").exists():
            with self._lock("replicator-jvm"):
                if not (dest / ".complete").exists():
                    mvn = _require_tool("mvn", "once, to build the replicator's producer interceptor",
                                        "Install Maven 3.8+ (Debian: apt-get install maven).")
                    self.java()
                    self.log(f"building the replicator's JVM part (Maven, once) into {dest}")
                    tmp = Path(tempfile.mkdtemp(prefix=".replicator-jvm-", dir=self._ensure(dest.parent)))
                    build = tmp / "build"
                    shutil.copytree(REPLICATOR_JVM_DIR, build, ignore=shutil.ignore_patterns("target"))
                    self._run([mvn, "-B", "-q", "package", "-DskipTests"], "mvn (replicator-jvm)",
                              _reach(maven_source(), "and that javac (JDK 17) is installed"),
                              cwd=build)
                    shutil.copy2(build / "target" / jar.name, tmp / jar.name)
                    shutil.rmtree(build)
                    (tmp / ".complete").touch()
                    shutil.rmtree(dest, ignore_errors=True)
                    tmp.rename(dest)
        return jar

    # --- Toxiproxy --------------------------------------------------------------------
    def toxiproxy_server(self) -> Path:
        """The Toxiproxy server binary, built from its Go module at the pinned tag."""
        dest = self.home / "toxiproxy" / versions.TOXIPROXY_VERSION
        binary = dest / "toxiproxy-server"
        if not (dest / ".complete").exists():
            with self._lock("toxiproxy"):
                if not (dest / ".complete").exists():
                    go = _require_tool(
                        "go", "once, to build the Toxiproxy server (WAN emulation)",
                        "Install Go 1.22+ (https://go.dev/doc/install or apt-get install golang).",
                    )
                    self.log(f"building Toxiproxy {versions.TOXIPROXY_VERSION} (go install, once) into {dest}")
                    tmp = Path(tempfile.mkdtemp(prefix=".toxiproxy-", dir=self._ensure(dest.parent)))
                    env = dict(os.environ, GOBIN=str(tmp), CGO_ENABLED="0", GOFLAGS="-mod=mod")
                    env.setdefault("GOTOOLCHAIN", "local")
                    self._run([go, "install", f"{versions.TOXIPROXY_MODULE}/cmd/server@{versions.TOXIPROXY_VERSION}"],
                              "go install (toxiproxy)", _reach(go_source()),
                              env=env)
                    (tmp / "server").rename(tmp / "toxiproxy-server")
                    (tmp / ".complete").touch()
                    shutil.rmtree(dest, ignore_errors=True)
                    tmp.rename(dest)
        return binary

    # --- Allure -----------------------------------------------------------------------
    def allure_cli(self) -> Path:
        """The Allure 3 command line, installed with ``npm ci`` from the repo's lock file."""
        lock = ALLURE_DIR / "package-lock.json"
        dest = self.home / "allure" / _digest(ALLURE_DIR / "package.json", lock)
        cli = dest / "node_modules" / ".bin" / "allure"
        if not (dest / ".complete").exists():
            with self._lock("allure"):
                if not (dest / ".complete").exists():
                    npm = _require_tool("npm", "once, to install Allure 3 (HTML reports)",
                                        "Install Node.js 20+ with npm (Debian: apt-get install nodejs npm).")
                    self.log(f"installing Allure 3 (npm ci, once) into {dest}")
                    tmp = Path(tempfile.mkdtemp(prefix=".allure-", dir=self._ensure(dest.parent)))
                    shutil.copy2(ALLURE_DIR / "package.json", tmp)
                    shutil.copy2(lock, tmp)
                    self._run([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"],
                              "npm ci (allure)", _reach(npm_source()), cwd=tmp)
                    (tmp / ".complete").touch()
                    shutil.rmtree(dest, ignore_errors=True)
                    tmp.rename(dest)
        return cli

    # --- Chromium (only the report's browser test needs it) ----------------------------
    CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")

    def chromium(self) -> str:
        """A headless-capable Chromium: found on PATH, or installed from Debian's packages (as root)."""
        found = next((shutil.which(n) for n in self.CHROMIUM_NAMES if shutil.which(n)), None)
        if found:
            return found
        self.can_apt_install("Chromium is needed to open rendered reports in a browser and is not on PATH. "
                             "Install it (Debian/Ubuntu: sudo apt-get install -y chromium) and rerun.")
        with self._lock("chromium"):
            if not any(shutil.which(n) for n in self.CHROMIUM_NAMES):
                self.apt_install("chromium", why="Chromium")
        return next(path for path in map(shutil.which, self.CHROMIUM_NAMES) if path)

    # --- Debian packages (as root) ------------------------------------------------------
    def can_apt_install(self, otherwise: str) -> str:
        """apt-get's path when this process may install packages (root); else BootstrapError(otherwise)."""
        apt = shutil.which("apt-get")
        if apt is None or os.geteuid() != 0:
            raise BootstrapError(otherwise)
        return apt

    def apt_install(self, package: str, why: str, recommends: bool = False) -> None:
        """``apt-get update`` and ``apt-get install -y package`` (once; callers check first)."""
        apt = self.can_apt_install(f"{why} needs the Debian package {package}, and only root with apt-get can "
                                   f"install it here. Install it (sudo apt-get install -y {package}) and rerun.")
        self.log(f"installing {package} for {why} (apt-get, once)")
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        self._run([apt, "update", "-qq"], "apt-get update", "Check that Debian's mirrors are reachable.", env=env)
        self._run([apt, "install", "-y", "-qq", *([] if recommends else ["--no-install-recommends"]), package],
                  f"apt-get install {package}", f"Install the {package} package by hand and rerun.", env=env)

    # --- everything -------------------------------------------------------------------
    def ensure_all(self, with_allure: bool = True) -> Artifacts:
        """Install (or find) every artifact; a second call does no network work."""
        return Artifacts(
            java=self.java(),
            broker_classpath=self.jvm_classpath("broker"),
            mirrormaker_classpath=self.jvm_classpath("mirrormaker"),
            spark_kafka_jars=self.jvm_classpath("spark-kafka"),
            replicator_jar=self.replicator_jar(),
            toxiproxy_server=self.toxiproxy_server(),
            allure_cli=self.allure_cli() if with_allure else None,
            mirrormaker1_classpath=self.jvm_classpath("mirrormaker1"),
        )

    # --- helpers ----------------------------------------------------------------------
    def _ensure(self, path: Path) -> Path:
        path.mkdir(parents=True, exist_ok=True)
        return path

    def _log_path(self, what: str) -> Path:
        return self.home / "logs" / (re.sub(r"[^\w.-]+", "_", what).strip("_") + ".log")

    def _run(self, cmd: list[str], what: str, hint: str, **kwargs: Any) -> None:
        log_path = self._log_path(what)
        self._ensure(log_path.parent)
        with open(log_path, "w") as log:
            proc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, **kwargs)
        if proc.returncode != 0:
            tail = "".join(log_path.read_text(errors="replace").splitlines(keepends=True)[-15:])
            raise BootstrapError(f"{what} failed (exit {proc.returncode}). {hint}\n"
                                 f"full log: {log_path}\n--- last lines ---\n{tail}")

    @contextmanager
    def _lock(self, name: str) -> Iterator[None]:
        # Several test workers or drills may bootstrap at once; one downloads, the others wait.
        lock_path = self._ensure(self.home / "locks") / f"{name}.lock"
        with open(lock_path, "w") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)
