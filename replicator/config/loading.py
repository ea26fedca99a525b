"""Loading a configuration file by its extension: MM2 ``.properties`` or ``.yaml``/``.yml``."""

from __future__ import annotations

from pathlib import Path

from mirrordrill.primitives.config_errors import ConfigError
from mirrordrill.replicator.config.properties_reader import parse_mm2_properties
from mirrordrill.replicator.config.settings import ReplicatorConfig
from mirrordrill.replicator.config.yaml_reader import parse_yaml


def load_config(path: str | Path) -> ReplicatorConfig:
    """Load ``.properties`` (MM2, read as ISO-8859-1 like MM2 does) or ``.yaml``/``.yml``."""
    file = Path(path)
    suffix = file.suffix.lower()
    if suffix == ".properties":
        return parse_mm2_properties(file.read_bytes().decode("latin-1"), str(file))
    if suffix in (".yaml", ".yml"):
        try:
            text = file.read_bytes().decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ConfigError(f"not UTF-8: {exc}", source=str(file), valid="a UTF-8 YAML file") from None
        return parse_yaml(text, str(file))
    raise ConfigError(
        f"cannot tell the format from the extension {file.suffix!r}",
        source=str(file),
        valid=".properties (MirrorMaker 2), .yaml or .yml",
    )
