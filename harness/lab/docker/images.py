"""mirrordrill's container images: what each holds, its tag, and an idempotent build.

The image contract (docs/containers.md) is what the Compose renderer and the test fixtures
build on: stable tags (``mirrordrill/broker:<kafka version>`` ...), the label ``mirrordrill``
on every image and ``mirrordrill.inputs`` = a hash of everything the image is made from, so a
stale image is rebuilt under the same tag and a fresh one is left alone in seconds.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from mirrordrill.harness.lab.brokers.broker import broker_jvm_options
from mirrordrill.harness.lab.docker import contexts
from mirrordrill.harness.lab.docker.engine import Engine, EngineError
from mirrordrill.primitives import versions
from mirrordrill.primitives.about import mirrordrill_version
from mirrordrill.primitives.bootstrap import Bootstrap

LABEL = "mirrordrill"
INPUTS_LABEL = "mirrordrill.inputs"
# Paths inside the images (the contract's file layout).
OPT = "/opt/mirrordrill"
KAFKA_LIBS = f"{OPT}/kafka/libs"
KAFKA_LOG4J = f"{OPT}/kafka/config/log4j2.properties"
VENV = f"{OPT}/venv"
SPARK_HOME = f"{VENV}/lib/python3.11/site-packages/pyspark"
SPARK_JARS = f"{OPT}/jars"
MIRRORMAKER_LIBS = f"{OPT}/mirrormaker/libs"
TOXIPROXY_BIN = "/toxiproxy-server"
JAVA = "/usr/lib/jvm/java-17-openjdk-amd64/bin/java"
LOG4J_SOURCE = Path(__file__).resolve().parents[1] / "resources" / "log4j2.properties"


def project_version() -> str:
    return mirrordrill_version()


def pyspark_version() -> str:
    pin = next(d for d in contexts.project_dependencies() if d.startswith("pyspark"))
    return pin.split("==", 1)[1]


def broker_java_argv(main_class: str, *args: str, heap_mb: int = 512, jit: str = "c1",
                     log4j: str = KAFKA_LOG4J, logs_dir: str = "/tmp") -> list[str]:
    """The java command line of the broker image (the same options as the local broker process):
    ``broker_java_argv("kafka.Kafka", "/etc/mirrordrill/server.properties")`` runs a broker,
    ``broker_java_argv("kafka.tools.StorageTool", "format", "-t", ID, "-c", PROPS,
    "--ignore-formatted")`` formats its storage."""
    return [JAVA, *broker_jvm_options(heap_mb, jit, log4j, logs_dir), "-cp", f"{KAFKA_LIBS}/*", main_class, *args]


@dataclass(frozen=True)
class ImageSpec:
    """One image: its name, tag, parent, what goes into its inputs hash, and its context."""

    name: str
    tag: str
    parent: str | None
    # Strings that identify the inputs cheaply (pins, file names and sizes, source hashes).
    inputs: Callable[[Bootstrap], list[str]]
    # Fills the context folder (Dockerfile and files); not called for the debootstrap base.
    context: Callable[[Bootstrap, Path, ImageSet], str] | None = None

    @property
    def ref(self) -> str:
        return f"mirrordrill/{self.name}:{self.tag}"


def _files_id(files) -> list[str]:
    return [f"{p.name}:{p.stat().st_size}" for p in files]


def _python_ctx(boot: Bootstrap, ctx: Path, images: ImageSet) -> str:
    wheels = contexts.dependency_wheels(boot)
    contexts.copy_files([p for p in wheels.iterdir() if p.is_file()], ctx / "wheels")
    contexts.project_wheel(boot, ctx / "project")
    return (f"FROM {images.spec('base').ref}\n"
            "COPY wheels/ /tmp/wheels/\n"
            f"RUN python3 -m venv {VENV} && {VENV}/bin/pip install -q --no-index --find-links /tmp/wheels "
            "-r /tmp/wheels/requirements.txt && rm -rf /tmp/wheels /root/.cache\n"
            "COPY project/ /tmp/project/\n"
            f"RUN {VENV}/bin/pip install -q --no-index --no-deps /tmp/project/*.whl && rm -rf /tmp/project /root/.cache\n"
            f"ENV PATH={VENV}/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "
            f"PYTHONUNBUFFERED=1 SPARK_HOME={SPARK_HOME} PYSPARK_PYTHON={VENV}/bin/python "
            "SPARK_LOCAL_IP=127.0.0.1\n")


def _broker_ctx(boot: Bootstrap, ctx: Path, images: ImageSet) -> str:
    contexts.copy_files(boot.jvm_classpath("broker"), ctx / "libs")
    contexts.copy_files([LOG4J_SOURCE], ctx / "config")
    return (f"FROM {images.spec('base').ref}\n"
            f"COPY libs/ {KAFKA_LIBS}/\n"
            f"COPY config/ {OPT}/kafka/config/\n"
            f"WORKDIR {OPT}/kafka\n")


def _toxiproxy_ctx(boot: Bootstrap, ctx: Path, images: ImageSet) -> str:
    contexts.copy_files([boot.toxiproxy_server()], ctx)
    return (f"FROM scratch\nCOPY toxiproxy-server {TOXIPROXY_BIN}\n"
            f'ENTRYPOINT ["{TOXIPROXY_BIN}"]\nCMD ["-host", "127.0.0.1", "-port", "8474"]\n')


def _spark_jars(boot: Bootstrap) -> list[Path]:
    return [*boot.jvm_classpath("spark-kafka"), boot.replicator_jar()]


def _spark_ctx(boot: Bootstrap, ctx: Path, images: ImageSet) -> str:
    jars = _spark_jars(boot)
    contexts.copy_files(jars, ctx / "jars")
    contexts.copy_files(boot.jvm_classpath("mirrormaker"), ctx / "mirrormaker")
    jar_list = ",".join(f"{SPARK_JARS}/{j.name}" for j in jars)
    return (f"FROM {images.spec('python').ref}\n"
            f"COPY jars/ {SPARK_JARS}/\n"
            f"COPY mirrormaker/ {MIRRORMAKER_LIBS}/\n"
            # The bundled replicator reads its jars from here (replicator/__main__.py JARS_ENV).
            f"ENV MIRRORDRILL_REPLICATOR_JARS={jar_list}\n"
            "WORKDIR /tmp\n")


def _loadgen_ctx(boot: Bootstrap, ctx: Path, images: ImageSet) -> str:
    cmd = '["python", "-m", "mirrordrill.loadgen.load_process", "--help"]'
    return f"FROM {images.spec('python').ref}\nWORKDIR /tmp\nCMD {cmd}\n"


def default_specs() -> list[ImageSpec]:
    """Every image, parents before children."""
    def py_inputs(b: object) -> list:
        return [contexts.source_digest(), *contexts.project_dependencies()]

    return [
        ImageSpec("base", contexts.DEBIAN_SUITE, None,
                  lambda b: [contexts.DEBIAN_SUITE, contexts.DEBIAN_MIRROR, *contexts.BASE_PACKAGES]),
        ImageSpec("python", project_version(), "base", py_inputs, _python_ctx),
        ImageSpec("broker", versions.kafka_version(), "base",
                  lambda b: _files_id(b.jvm_classpath("broker")) + [LOG4J_SOURCE.read_text()], _broker_ctx),
        ImageSpec("toxiproxy", versions.TOXIPROXY_VERSION, None,
                  lambda b: [versions.TOXIPROXY_MODULE, versions.TOXIPROXY_VERSION,
                             *_files_id([b.toxiproxy_server()])], _toxiproxy_ctx),
        ImageSpec("spark", pyspark_version(), "python",
                  lambda b: _files_id(_spark_jars(b)) + _files_id(b.jvm_classpath("mirrormaker")), _spark_ctx),
        ImageSpec("loadgen", project_version(), "python", lambda b: [], _loadgen_ctx),
    ]


@dataclass
class BuildResult:
    name: str
    ref: str
    built: bool
    seconds: float
    size_mb: float


@dataclass
class ImageSet:
    """The images and their build; ``build`` is idempotent and builds parents first."""

    engine: Engine
    boot: Bootstrap = field(default_factory=Bootstrap)
    specs: list[ImageSpec] = field(default_factory=default_specs)
    log: Callable[[str], None] | None = None

    def __post_init__(self) -> None:
        # the log in use: the one given, else the bootstrap's (``log`` itself may stay None)
        self._say: Callable[[str], None] = self.log or self.boot.log
        self._digests: dict[str, str] = {}

    @property
    def names(self) -> list[str]:
        return [s.name for s in self.specs]

    def spec(self, name: str) -> ImageSpec:
        for s in self.specs:
            if s.name == name:
                return s
        raise KeyError(f"unknown image {name!r}; the images are: {', '.join(self.names)}")

    def digest(self, name: str) -> str:
        """The inputs hash of one image: its own inputs and its parent's image id."""
        if name not in self._digests:
            spec = self.spec(name)
            h = hashlib.sha256(f"{spec.ref}\n".encode())
            for item in spec.inputs(self.boot):
                h.update(item.encode() + b"\n")
            if spec.context is not None:
                h.update(spec.context.__name__.encode())
                h.update(Path(__file__).read_bytes())  # Dockerfiles are written here
            if spec.parent:
                h.update((self.image_id(self.spec(spec.parent).ref) or "absent").encode())
            self._digests[name] = h.hexdigest()
        return self._digests[name]

    def image_id(self, ref: str) -> str | None:
        found = self.engine.inspect_image(ref)
        return found["Id"] if found else None

    def status(self, name: str) -> str:
        """``fresh``, ``stale`` (built from other inputs) or ``missing``."""
        found = self.engine.inspect_image(self.spec(name).ref)
        if found is None:
            return "missing"
        labels = (found.get("Config") or {}).get("Labels") or {}
        return "fresh" if labels.get(INPUTS_LABEL) == self.digest(name) else "stale"

    def chain(self, name: str) -> list[str]:
        """``name`` and its ancestors, parents first."""
        out: list[str] = []
        cur: str | None = name
        while cur:
            out.insert(0, cur)
            cur = self.spec(cur).parent
        return out

    def build(self, only: list[str] | None = None) -> list[BuildResult]:
        wanted = only or self.names
        order = [n for n in self.names if any(n in self.chain(w) for w in wanted)]
        return [self._build_one(n) for n in order]

    def _build_one(self, name: str) -> BuildResult:
        # Test sessions and drills may build at once: one builds, the others find it fresh.
        with self.boot._lock(f"image-{name}"):
            return self._build_locked(name)

    def _build_locked(self, name: str) -> BuildResult:
        spec, t = self.spec(name), time.monotonic()
        self._digests.pop(name, None)  # the parent may just have been rebuilt
        if self.status(name) == "fresh":
            self._say(f"{spec.ref}: up to date")
            return BuildResult(name, spec.ref, False, round(time.monotonic() - t, 1), self._size_mb(spec.ref))
        self._say(f"{spec.ref}: building")
        digest = self.digest(name)
        work = Path(tempfile.mkdtemp(prefix=f".image-{name}-", dir=self.boot._ensure(self.boot.home / "tmp")))
        try:
            if spec.context is None:
                self._build_base(spec, digest, work)
            else:
                dockerfile = spec.context(self.boot, work, self)
                (work / "Dockerfile").write_text(dockerfile)
                self._docker_build(spec, digest, work)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        took = round(time.monotonic() - t, 1)
        self._say(f"{spec.ref}: built in {took:.0f}s")
        return BuildResult(name, spec.ref, True, took, self._size_mb(spec.ref))

    def _build_base(self, spec: ImageSpec, digest: str, work: Path) -> None:
        rootfs = work / "rootfs"
        self._say(f"{spec.ref}: debootstrap {contexts.DEBIAN_SUITE} with {', '.join(contexts.BASE_PACKAGES)} "
                 "(about 70 s)")
        contexts.debootstrap_rootfs(self.boot, rootfs)
        self._say(f"{spec.ref}: docker import")
        contexts.docker_import(self.engine.cli, rootfs, spec.ref,
                               [f"LABEL {LABEL}=image", f"LABEL {INPUTS_LABEL}={digest}",
                                "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                                "ENV LANG=C.UTF-8", 'CMD ["/bin/bash"]'],
                               self.boot._log_path(f"docker import {spec.name}"))

    def _docker_build(self, spec: ImageSpec, digest: str, ctx: Path) -> None:
        log_path = self.boot._log_path(f"docker build {spec.name}")
        # The classic builder: the engine's BuildKit needs the buildx plugin with newer CLIs.
        env = dict(os.environ, DOCKER_BUILDKIT="0")
        cmd = [self.engine.cli, "build", "--pull=false", "-t", spec.ref, "--label", f"{LABEL}=image",
               "--label", f"{INPUTS_LABEL}={digest}", str(ctx)]
        with open(log_path, "w") as log:
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
            assert proc.stdout is not None  # stdout=PIPE
            for line in proc.stdout:
                log.write(line)
                if line.startswith("Step "):  # progress: one line per Dockerfile step
                    self._say(f"{spec.ref}: {line.strip()[:140]}")
            rc = proc.wait()
        if rc != 0:
            tail = "".join(log_path.read_text(errors="replace").splitlines(keepends=True)[-15:])
            raise EngineError(f"docker build of {spec.ref} failed (exit {rc}); full log: {log_path}\n{tail}")

    def _size_mb(self, ref: str) -> float:
        found = self.engine.inspect_image(ref)
        return round((found or {}).get("Size", 0) / 1e6, 1)
