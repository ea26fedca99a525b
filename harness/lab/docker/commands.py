"""``mirrordrill images build`` and the Docker part of ``mirrordrill doctor`` (``--fix`` too)."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass

from mirrordrill.harness.lab.docker.contexts import ContextError
from mirrordrill.harness.lab.docker.engine import COMPOSE_VERSION, EngineError, compose_plugin_build, ensure_engine, find_engine
from mirrordrill.harness.lab.docker.images import ImageSet
from mirrordrill.primitives.bootstrap import Bootstrap, BootstrapError

FIX_IMAGES = "./mirrordrill images build"


def _log(msg: str) -> None:
    print(f"mirrordrill: {msg}", file=sys.stderr, flush=True)


def images_build(only: list[str] | None) -> int:
    """Build (or find up to date) every image, or ``only`` those and their parents; 0 on success."""
    t = time.monotonic()
    try:
        engine = ensure_engine(log=_log)
        images = ImageSet(engine, boot=Bootstrap(log=_log), log=_log)
        for name in only or []:
            images.spec(name)  # an unknown name fails before anything is built
        results = images.build(only)
        # The chaos lab's recipe is `images build` then `docker compose ... up`: without --only, build
        # the Compose v2 plugin too (Debian ships only v1), so the command the docs name does what they say.
        compose = None if only else compose_plugin_build(Bootstrap(log=_log))
    except KeyError as e:
        print(f"mirrordrill images build: {e.args[0]}", file=sys.stderr)
        return 2
    except (EngineError, ContextError, BootstrapError) as e:
        print(f"mirrordrill images build: {e}", file=sys.stderr)
        return 3
    for r in results:
        state = f"built in {r.seconds:.0f}s" if r.built else f"up to date ({r.seconds:.1f}s)"
        print(f"{r.ref:36} {r.size_mb:8.0f} MB  {state}")
    if compose is not None:
        print(f"docker compose v2 plugin: {compose}")
    print(f"images ready in {time.monotonic() - t:.1f}s")
    return 0


@dataclass
class DockerCheck:
    name: str
    ok: bool
    detail: str
    fix: str | None


def docker_checks(fix: bool = False) -> list[DockerCheck]:
    """Engine reachable?, Compose v2?, each image present and fresh? With ``fix``, first
    install/start the engine, build the Compose plugin and the images."""
    if fix:
        try:
            fixed = ensure_engine(log=_log)
            compose_plugin_build(Bootstrap(log=_log))
            ImageSet(fixed, boot=Bootstrap(log=_log), log=_log).build()
        except (EngineError, ContextError, BootstrapError) as e:
            _log(f"doctor --fix: {e}")
    engine = find_engine()
    if engine is None:
        return [DockerCheck("docker engine", False, "no engine answers 'docker version'",
                            "./mirrordrill doctor --fix (root + apt: installs docker.io, starts dockerd)")]
    checks = [DockerCheck("docker engine", True, f"server {engine.server_version} via {engine.cli}", None)]
    compose = engine.compose_version()
    checks.append(DockerCheck("docker compose v2", compose is not None and compose.startswith("2."),
                              f"docker compose {compose}" if compose else "no 'docker compose' (v2 CLI plugin)",
                              None if compose else f"./mirrordrill doctor --fix (builds Compose {COMPOSE_VERSION} "
                                                   "with Go, ~5 min, into ~/.docker/cli-plugins)"))
    images = ImageSet(engine, log=lambda m: None)
    for name in images.names:
        ref = images.spec(name).ref
        try:
            state = images.status(name)
        except (BootstrapError, EngineError) as e:
            state = f"unknown ({e})"
        checks.append(DockerCheck(f"image {ref}", state == "fresh", state,
                                  None if state == "fresh" else f"{FIX_IMAGES} --only {name}"))
    return checks
