"""Where the replicator finds Spark's jars: --jars, the environment, the configuration, nothing else.

The replicator is what a user hands to spark-submit, so it must not look for mirrordrill's
installation; ``mirrordrill replicate`` passes the jars it installed.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from mirrordrill.harness.cli import commands as cli
from mirrordrill.primitives.import_root import IMPORT_ROOT
from mirrordrill.replicator import __main__ as replicator_main
from mirrordrill.replicator.__main__ import JARS_ENV, NoJars, resolve_jars
from mirrordrill.replicator.config.properties_reader import parse_mm2_properties
from mirrordrill.replicator.config.render import to_mm2_properties
from mirrordrill.replicator.config.yaml_reader import parse_yaml
from tests.unit.replicator_config_helpers import HEAD, props_error

REPO = Path(__file__).resolve().parents[2]


def test_jars_setting_in_properties_and_yaml() -> None:
    from_properties = parse_mm2_properties(HEAD + "mirrordrill.spark.jars = /j/kafka.jar, /j/ours.jar\n")
    from_yaml = parse_yaml("clusters:\n  A: {bootstrap_servers: a1:9092}\njars: [/j/kafka.jar, /j/ours.jar]\n")
    assert from_properties.jars == from_yaml.jars == ["/j/kafka.jar", "/j/ours.jar"]
    rendered = to_mm2_properties(from_properties)
    assert "mirrordrill.spark.jars = /j/kafka.jar, /j/ours.jar" in rendered
    assert parse_mm2_properties(rendered).model_dump() == from_properties.model_dump()
    assert "mirrordrill.spark.jars" not in to_mm2_properties(parse_mm2_properties(HEAD))


def test_jars_are_set_once_for_the_process() -> None:
    error = props_error("A->B.mirrordrill.spark.jars = /j/a.jar\n")
    assert error.key == "A->B.mirrordrill.spark.jars" and "set once" in str(error)
    assert error.valid == "mirrordrill.spark.jars"


def test_jars_from_flag_then_environment_then_configuration(monkeypatch: pytest.MonkeyPatch) -> None:
    configured = parse_mm2_properties(HEAD + "mirrordrill.spark.jars = /c/a.jar\n")
    monkeypatch.setenv(JARS_ENV, "/e/a.jar,/e/b.jar")
    assert resolve_jars("/f/a.jar", configured) == [Path("/f/a.jar")]
    assert resolve_jars(None, configured) == [Path("/e/a.jar"), Path("/e/b.jar")]
    monkeypatch.delenv(JARS_ENV)
    assert resolve_jars(None, configured) == [Path("/c/a.jar")]
    assert resolve_jars(None, configured, lambda: [Path("/d/a.jar")]) == [Path("/c/a.jar")]
    assert resolve_jars(None, parse_mm2_properties(HEAD), lambda: [Path("/d/a.jar")]) == [Path("/d/a.jar")]


def test_no_jars_names_the_three_ways(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv(JARS_ENV, raising=False)
    with pytest.raises(NoJars) as info:
        resolve_jars(None, parse_mm2_properties(HEAD))
    assert all(way in str(info.value) for way in ("--jars", JARS_ENV, "mirrordrill.spark.jars"))
    config = tmp_path / "mm2.properties"
    config.write_text(HEAD + "A->B.enabled = true\n")
    assert replicator_main.main(["--config", str(config), "--workdir", str(tmp_path / "w")]) == 2
    assert "no jars for Spark" in capsys.readouterr().err


def test_python_m_replicator_stands_alone(tmp_path: Path) -> None:
    config = tmp_path / "mm2.properties"
    config.write_text(HEAD)
    env = {"PYTHONPATH": str(IMPORT_ROOT), "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-m", "mirrordrill.replicator", "--config", str(config)],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60)
    assert done.returncode == 2
    assert "--jars" in done.stderr and JARS_ENV in done.stderr and "mirrordrill.spark.jars" in done.stderr


def test_mirrordrill_replicate_passes_the_installed_jars(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    seen: dict[str, object] = {}

    class FakeBootstrap:
        def jvm_classpath(self, profile: str) -> list[Path]:
            return [Path(f"/cache/{profile}.jar")]

        def replicator_jar(self) -> Path:
            return Path("/cache/ours.jar")

    def fake_main(argv: list[str], default_jars=None) -> int:
        seen["argv"], seen["jars"] = argv, default_jars()
        return 0

    monkeypatch.setattr(cli, "Bootstrap", FakeBootstrap)
    monkeypatch.setattr(replicator_main, "main", fake_main)
    args = cli.build_parser().parse_args(["replicate", "--config", str(tmp_path / "mm2.properties")])
    assert cli.cmd_replicate(args) == 0
    assert seen["jars"] == [Path("/cache/spark-kafka.jar"), Path("/cache/ours.jar")]
    assert "--jars" not in seen["argv"]  # type: ignore[operator]  # seen holds lists and paths
