"""Build contexts of mirrordrill's images: a Debian root file system, Python wheels, jars.

Nothing comes from an image registry (none is reachable here): the base is made with
``debootstrap`` from Debian's mirror, Python packages are wheels built on the host by pip (the
host's own Python cannot be copied in), jars and the Toxiproxy binary come from the bootstrap's
cache. Every step writes into a context folder handed to ``docker build``/``docker import``.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import shutil
import subprocess
import sys
import zipfile
from importlib import metadata
from pathlib import Path

from mirrordrill.primitives.bootstrap import Bootstrap, _digest, checkout_root

DEBIAN_SUITE = "bookworm"
DEBIAN_MIRROR = os.environ.get("MIRRORDRILL_DEBIAN_MIRROR", "http://deb.debian.org/debian")
# One base serves every image but Toxiproxy's: a JRE for Kafka and Spark, Python 3.11 for the
# replicator and the load (venv for an offline pip install), procps for Spark's scripts.
BASE_PACKAGES = ("openjdk-17-jre-headless", "python3", "python3-venv", "procps")
PROJECT_PACKAGES = ("primitives", "harness", "replicator", "loadgen", "reports")
NAMESPACE_INIT = Path("src/mirrordrill/__init__.py")  # in the checkout; the packages above are linked beside it


class ContextError(RuntimeError):
    """A build context could not be made; the message names the fix."""


def debootstrap_rootfs(boot: Bootstrap, dest: Path) -> None:
    """A minimal Debian ``bookworm`` with BASE_PACKAGES in ``dest`` (about 70 s, ~300 MB)."""
    debootstrap = shutil.which("debootstrap") or _install_debootstrap(boot)
    boot._run([debootstrap, "--variant=minbase", f"--include={','.join(BASE_PACKAGES)}",
               DEBIAN_SUITE, str(dest), DEBIAN_MIRROR], "debootstrap (base image)",
              f"Check that {DEBIAN_MIRROR} is reachable (or set MIRRORDRILL_DEBIAN_MIRROR), then rerun.")
    # Downloaded .debs and package lists are not needed at run time: ~100 MB less per image.
    for junk in ("var/cache/apt/archives", "var/lib/apt/lists"):
        for p in (dest / junk).glob("*"):
            if p.is_file():
                p.unlink()


def _install_debootstrap(boot: Bootstrap) -> str:
    boot.can_apt_install("'debootstrap' is not on PATH; it builds the base image from Debian's mirror. "
                         "Install it (Debian: sudo apt-get install -y debootstrap) and rerun.")
    boot.apt_install("debootstrap", why="the base image")
    return shutil.which("debootstrap") or "/usr/sbin/debootstrap"


def project_dependencies() -> list[str]:
    """The runtime requirements of the installed mirrordrill (no extras): the wheel's metadata, or the
    editable install's, which the wrapper remakes whenever pyproject.toml changes."""
    return [r for r in metadata.requires("mirrordrill") or [] if not re.search(r"\bextra\s*==", r)]


def _installed_files() -> list[metadata.PackagePath]:
    """The installed distribution's own files (its RECORD), without byte code and the scripts pip wrote."""
    return [f for f in metadata.distribution("mirrordrill").files or []
            if f.parts[0] != ".." and "__pycache__" not in f.parts]


def source_digest() -> str:
    """A hash of everything the project wheel is made from: the checkout's pyproject, README and package
    sources, or the installed package's files."""
    root = checkout_root()
    if root is None:
        return _digest(*(Path(str(f.locate())) for f in _installed_files()))
    files = [root / "pyproject.toml", root / "README.md", root / NAMESPACE_INIT]
    for pkg in PROJECT_PACKAGES:
        files += sorted(p for p in (root / pkg).rglob("*")
                        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
                        and "target" not in p.relative_to(root).parts)
    return _digest(*files)


def dependency_wheels(boot: Bootstrap) -> Path:
    """Wheels of every runtime dependency for CPython 3.11 on Linux, built once per pyproject."""
    if sys.version_info[:2] != (3, 11):
        raise ContextError(f"the images' Python is Debian bookworm's 3.11 and wheels are built by the host's "
                           f"Python, which is {sys.version.split()[0]}; run mirrordrill with Python 3.11 "
                           "(MIRRORDRILL_PYTHON=python3.11) to build the Python images.")
    reqs_text = "\n".join(project_dependencies()) + "\n"
    # Keyed by the runtime requirements only: test extras or tool settings do not rebuild them.
    dest = boot.home / "wheels" / hashlib.sha256(reqs_text.encode()).hexdigest()[:12]
    if (dest / ".complete").exists():
        return dest
    with boot._lock("wheels"):
        if not (dest / ".complete").exists():
            boot.log(f"building wheels of the project's dependencies (pip wheel, once) into {dest}")
            shutil.rmtree(dest, ignore_errors=True)
            dest.mkdir(parents=True)
            reqs = dest / "requirements.txt"
            reqs.write_text(reqs_text)
            boot._run([sys.executable, "-m", "pip", "wheel", "-q", "--wheel-dir", str(dest), "-r", str(reqs)],
                      "pip wheel (image dependencies)", "Check that PyPI is reachable, then rerun.")
            (dest / ".complete").touch()
    return dest


def project_wheel(boot: Bootstrap, dest: Path) -> Path:
    """The mirrordrill wheel (no dependencies): built from a copy of the checkout so that it stays clean,
    or, in an installed tool, the installed distribution packed again as the wheel it came from."""
    root = checkout_root()
    if root is None:
        return installed_wheel(dest)
    src = dest / "src"
    shutil.rmtree(src, ignore_errors=True)
    src.mkdir(parents=True)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(root / name, src / name)
    namespace = src / NAMESPACE_INIT.parent
    namespace.mkdir(parents=True)
    shutil.copy2(root / NAMESPACE_INIT, namespace / NAMESPACE_INIT.name)
    for pkg in PROJECT_PACKAGES:
        # the folders src/mirrordrill links, copied into it; links followed (harness/drill/scenarios
        # is a link to scenarios/: the shipped drills)
        shutil.copytree(root / pkg, namespace / pkg, symlinks=False,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "target", "node_modules"))
    boot._run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
               "--wheel-dir", str(dest), str(src)], "pip wheel (mirrordrill)",
              "The project's own wheel did not build; see the log.")
    shutil.rmtree(src)
    wheels = list(dest.glob("mirrordrill-*.whl"))
    if len(wheels) != 1:
        raise ContextError(f"expected one mirrordrill wheel in {dest}, found {len(wheels)}")
    return wheels[0]


def installed_wheel(dest: Path) -> Path:
    """The installed mirrordrill as a wheel again: its files and metadata as pip installed them, with a
    RECORD of their hashes (pip's own INSTALLER, REQUESTED and direct_url.json left out)."""
    dist = metadata.distribution("mirrordrill")
    info = f"mirrordrill-{dist.version}.dist-info"
    tag = (dist.read_text("WHEEL") or "").partition("Tag: ")[2].split()[0] or "py3-none-any"
    dest.mkdir(parents=True, exist_ok=True)
    wheel = dest / f"mirrordrill-{dist.version}-{tag}.whl"
    record = []
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as whl:
        for f in _installed_files():
            if f.parts[0] == info and f.name in ("RECORD", "INSTALLER", "REQUESTED", "direct_url.json"):
                continue
            data = Path(str(f.locate())).read_bytes()
            whl.writestr(f.as_posix(), data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append(f"{f.as_posix()},sha256={digest},{len(data)}")
        whl.writestr(f"{info}/RECORD", "\n".join([*record, f"{info}/RECORD,,"]) + "\n")
    return wheel


def copy_files(files: list[Path] | tuple[Path, ...], dest: Path) -> None:
    """Hard-link (or copy) files into a context folder: jars are large and never change in place."""
    dest.mkdir(parents=True, exist_ok=True)
    for f in files:
        target = dest / f.name
        try:
            os.link(f, target)
        except OSError:
            shutil.copy2(f, target)


def docker_import(cli: str, rootfs: Path, ref: str, changes: list[str], log_path: Path) -> None:
    """``tar | docker import`` of a root file system, with Dockerfile ``changes`` (LABEL, ENV)."""
    args = [cli, "import"]
    for change in changes:
        args += ["--change", change]
    with open(log_path, "w") as log:
        tar = subprocess.Popen(["tar", "-C", str(rootfs), "--numeric-owner", "-c", "."], stdout=subprocess.PIPE)
        assert tar.stdout is not None  # stdout=PIPE
        imp = subprocess.run([*args, "-", ref], stdin=tar.stdout, stdout=log, stderr=subprocess.STDOUT)
        tar.stdout.close()
        tar_rc = tar.wait()
    if tar_rc != 0 or imp.returncode != 0:
        raise ContextError(f"docker import of {ref} failed (tar exit {tar_rc}, import exit {imp.returncode}); "
                           f"see {log_path}")
