"""The replicator's configuration: MirrorMaker 2 properties or our YAML, one model.

A team points the replicator at the ``connect-mirror-maker.properties`` it already runs MM2
with, or at the equivalent YAML; both load into ``ReplicatorConfig``, and
``to_mm2_properties`` renders a model back into a file MM2 runs with the same meaning.

Modules, from the bottom: ``errors``; ``validation`` (the rules); ``flow`` (per-flow
settings) and ``model`` (clusters and the whole configuration); ``mm2_keys`` (every MM2 key
and what we do with it); ``properties_syntax`` (Java properties, read and written);
``draft`` (settings with their file locations, built into models); ``properties_reader`` and
``yaml_reader``; ``render`` (model -> MM2 properties); ``loading`` (a file by its extension).
"""

from mirrordrill.primitives.config_errors import ConfigError, ConfigWarning
from mirrordrill.replicator.config.flow import FlowConfig
from mirrordrill.replicator.config.loading import load_config
from mirrordrill.replicator.config.properties_reader import parse_mm2_properties
from mirrordrill.replicator.config.render import to_mm2_properties
from mirrordrill.replicator.config.settings import ClusterConfig, ReplicatorConfig
from mirrordrill.replicator.config.yaml_reader import parse_yaml

__all__ = [
    "ClusterConfig",
    "ConfigError",
    "ConfigWarning",
    "FlowConfig",
    "ReplicatorConfig",
    "load_config",
    "parse_mm2_properties",
    "parse_yaml",
    "to_mm2_properties",
]
