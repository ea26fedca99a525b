"""Where mirrordrill's downloads come from on this machine: the registries or the team's mirrors.

mirrordrill passes no registry of its own: Maven reads the user's ``settings.xml``, ``go`` its
``GOPROXY``, npm its ``.npmrc`` and pip its ``pip.conf`` (or their environment variables), so a
company machine that reaches the registries only through its own mirrors needs nothing from us.
This module only reads those settings back, so ``setup`` can say which source each tool will use
(and a failed download can name it). A URL's user and password are never shown.
"""

from __future__ import annotations

import os
import subprocess
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

MAVEN_CENTRAL = "https://repo.maven.apache.org/maven2"
# Mirror patterns that cover Maven Central (Maven's own syntax: '*', 'external:*', 'central', lists).
_COVERS_CENTRAL = {"*", "central", "external:*", "external:https:*"}


@dataclass(frozen=True)
class PackageSource:
    tool: str  # maven | go | npm | pip
    url: str  # credentials removed
    origin: str  # which setting says so ("default" when nothing does)

    def describe(self) -> str:
        return f"{self.tool:6} {self.url}  ({self.origin})"


def without_credentials(url: str) -> str:
    parts = urlsplit(url.strip())
    if parts.username is None and parts.password is None:
        return url.strip()
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def maven_source(home: Path | None = None, env: dict[str, str] | None = None) -> PackageSource:
    """The mirror of Maven Central in the user's (else Maven's global) settings.xml, or Central itself."""
    env = dict(os.environ) if env is None else env
    home = home or Path.home()
    candidates = [home / ".m2" / "settings.xml"]
    if env.get("MAVEN_HOME"):
        candidates.append(Path(env["MAVEN_HOME"]) / "conf" / "settings.xml")
    for settings in candidates:
        mirror = _central_mirror(settings)
        if mirror:
            return PackageSource("maven", without_credentials(mirror[1]), f"mirror '{mirror[0]}' in {settings}")
    return PackageSource("maven", MAVEN_CENTRAL, "default: no mirror of central in ~/.m2/settings.xml")


def _central_mirror(settings: Path) -> tuple[str, str] | None:
    try:
        root = ET.parse(settings).getroot()
    except (OSError, ET.ParseError):
        return None
    for mirror in root.iter():
        if not mirror.tag.endswith("mirror"):
            continue
        fields = {child.tag.rsplit("}", 1)[-1]: (child.text or "").strip() for child in mirror}
        covers = {p.strip() for p in fields.get("mirrorOf", "").split(",")}
        if covers & _COVERS_CENTRAL and "!central" not in covers and fields.get("url"):
            return fields.get("id", "(no id)"), fields["url"]
    return None


def _tool_output(argv: list[str], env: dict[str, str] | None) -> str | None:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30, env=env)
    except (OSError, subprocess.TimeoutExpired):
        return None
    value = done.stdout.strip()
    return value if done.returncode == 0 and value and value != "undefined" else None


def go_source(env: dict[str, str] | None = None) -> PackageSource:
    proxy = _tool_output(["go", "env", "GOPROXY"], env)
    if proxy is None:
        return PackageSource("go", "https://proxy.golang.org", "default: go not found or GOPROXY unset")
    shown = ",".join(without_credentials(p) if "://" in p else p for p in proxy.split(","))
    return PackageSource("go", shown, "go env GOPROXY")


def npm_source(env: dict[str, str] | None = None) -> PackageSource:
    registry = _tool_output(["npm", "config", "get", "registry"], env)
    if registry is None:
        return PackageSource("npm", "https://registry.npmjs.org/", "default: npm not found")
    return PackageSource("npm", without_credentials(registry), "npm config get registry")


def pip_source(env: dict[str, str] | None = None) -> PackageSource:
    env = dict(os.environ) if env is None else env
    if env.get("PIP_INDEX_URL"):
        return PackageSource("pip", without_credentials(env["PIP_INDEX_URL"]), "PIP_INDEX_URL")
    configured = _tool_output(["python3", "-m", "pip", "config", "get", "global.index-url"], env)
    if configured:
        return PackageSource("pip", without_credentials(configured), "pip config global.index-url")
    return PackageSource("pip", "https://pypi.org/simple", "default: no index-url in pip's configuration")


def package_sources(env: dict[str, str] | None = None) -> list[PackageSource]:
    return [maven_source(env=env), go_source(env), npm_source(env), pip_source(env)]
