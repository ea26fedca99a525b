"""A Compose project as plain data, and its YAML: no Docker needed to render or test it.

Every service uses the host's network and carries the label ``mirrordrill`` plus the label
``mirrordrill.drill`` naming its project, so what a drill started can be found (and removed)
by label even when the harness itself did not get to clean up. Named volumes carry the same
labels; with every service on the host network, Compose creates no network.
"""

from __future__ import annotations

from dataclasses import dataclass

import yaml

LABEL = "mirrordrill"
DRILL_LABEL = "mirrordrill.drill"
ROLE_LABEL = "mirrordrill.role"


@dataclass(frozen=True)
class Mount:
    """A bind mount (``source`` a host path) or, with ``volume=True``, a named volume of the project."""

    source: str
    target: str
    read_only: bool = False
    volume: bool = False

    def render(self) -> str:
        return f"{self.source}:{self.target}" + (":ro" if self.read_only else "")


@dataclass(frozen=True)
class Service:
    """One container of the lab."""

    name: str
    image: str
    command: tuple[str, ...]
    role: str  # broker, toxiproxy, spark, replicator, load: the label the CPU meter and cleanup read
    mounts: tuple[Mount, ...] = ()
    environment: tuple[tuple[str, str], ...] = ()
    configs: tuple[tuple[str, str], ...] = ()  # (config name, path in the container)
    depends_on: tuple[str, ...] = ()
    working_dir: str | None = None
    stop_grace_s: int | None = None
    restart: str | None = None  # e.g. on-failure: a client that started before the brokers answered tries again


@dataclass(frozen=True)
class ComposeProject:
    """Services plus inline configs (file contents Compose mounts into containers)."""

    name: str
    services: tuple[Service, ...]
    configs: tuple[tuple[str, str], ...] = ()  # (name, content)
    header: str = ""  # comment lines written above the YAML

    def __post_init__(self) -> None:
        names = [s.name for s in self.services]
        if len(set(names)) != len(names):
            raise ValueError(f"compose project {self.name}: service names repeat: {names}")
        known = {n for n, _ in self.configs}
        for s in self.services:
            for c, _ in s.configs:
                if c not in known:
                    raise ValueError(f"service {s.name} mounts config {c!r}, which the project does not define")

    def container_name(self, service: str) -> str:
        return f"{self.name}-{service}"

    def labels(self, role: str) -> dict[str, str]:
        return {LABEL: "true", DRILL_LABEL: self.name, ROLE_LABEL: role}

    def volumes(self) -> list[str]:
        return sorted({m.source for s in self.services for m in s.mounts if m.volume})


def compose_dict(project: ComposeProject) -> dict:
    """The Compose file as a dict (Compose v2 format: no ``version`` key)."""
    services = {}
    for s in project.services:
        d: dict = {"image": s.image, "container_name": project.container_name(s.name), "network_mode": "host",
                   "labels": project.labels(s.role), "command": list(s.command)}
        if s.working_dir:
            d["working_dir"] = s.working_dir
        if s.environment:
            d["environment"] = dict(s.environment)
        if s.mounts:
            d["volumes"] = [m.render() for m in s.mounts]
        if s.configs:
            d["configs"] = [{"source": c, "target": t} for c, t in s.configs]
        if s.depends_on:
            d["depends_on"] = list(s.depends_on)
        if s.restart:
            d["restart"] = s.restart
        if s.stop_grace_s is not None:
            d["stop_grace_period"] = f"{s.stop_grace_s}s"
        services[s.name] = d
    out: dict = {"name": project.name, "services": services}
    volumes = project.volumes()
    if volumes:
        out["volumes"] = {v: {"labels": {LABEL: "true", DRILL_LABEL: project.name}} for v in volumes}
    if project.configs:
        out["configs"] = {n: {"content": content} for n, content in project.configs}
    return out


class _Dumper(yaml.SafeDumper):
    """Multi-line strings (config contents) as ``|`` blocks, so the file reads like the configs it holds."""


def _str(dumper: yaml.SafeDumper, value: str):
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def compose_yaml(project: ComposeProject) -> str:
    """The Compose file's text: the header as comments, then the YAML (keys in the order written)."""
    text = yaml.dump(compose_dict(project), Dumper=_Dumper, sort_keys=False, width=120, default_flow_style=False)
    head = "".join(f"# {line}".rstrip() + "\n" for line in project.header.splitlines())
    return head + text
