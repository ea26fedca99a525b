"""setup says where each tool downloads from: the team's mirror when its settings name one, never a password."""

from __future__ import annotations

import os

from mirrordrill.primitives.package_sources import (
    MAVEN_CENTRAL,
    go_source,
    maven_source,
    npm_source,
    pip_source,
    without_credentials,
)

SETTINGS = """<settings xmlns="http://maven.apache.org/SETTINGS/1.2.0">
  <mirrors>
    <mirror><id>corp-nexus</id><mirrorOf>{covers}</mirrorOf>
      <url>https://builder:s3cret@nexus.corp.example/repository/maven-public/</url></mirror>
  </mirrors>
</settings>"""


def _home_with(tmp_path, covers: str):
    (tmp_path / ".m2").mkdir()
    (tmp_path / ".m2" / "settings.xml").write_text(SETTINGS.format(covers=covers))
    return tmp_path


def test_a_maven_mirror_of_central_is_named_without_its_credentials(tmp_path):
    source = maven_source(_home_with(tmp_path, "*"), env={})
    assert source.url == "https://nexus.corp.example/repository/maven-public/"
    assert "corp-nexus" in source.origin and "s3cret" not in source.describe()


def test_a_mirror_that_excludes_central_leaves_central(tmp_path):
    assert maven_source(_home_with(tmp_path, "*,!central"), env={}).url == MAVEN_CENTRAL


def test_no_settings_or_unreadable_settings_mean_central(tmp_path):
    assert maven_source(tmp_path, env={}).origin.startswith("default")
    (tmp_path / ".m2").mkdir()
    (tmp_path / ".m2" / "settings.xml").write_text("<settings><mirrors>")
    assert maven_source(tmp_path, env={}).url == MAVEN_CENTRAL


def test_gos_proxy_list_is_read_from_go_itself():
    env = {**os.environ, "GOPROXY": "https://ci:tok@goproxy.corp.example,direct"}
    source = go_source(env)
    assert source.url == "https://goproxy.corp.example,direct" and source.origin == "go env GOPROXY"


def test_npms_registry_is_read_from_npm_itself():
    env = {**os.environ, "npm_config_registry": "https://npm.corp.example/"}
    assert npm_source(env).url == "https://npm.corp.example/"


def test_pips_index_from_the_environment():
    assert pip_source({"PIP_INDEX_URL": "https://u:p@pypi.corp.example/simple"}).url == "https://pypi.corp.example/simple"


def test_urls_without_credentials_keep_everything_else():
    assert without_credentials("https://a:b@h.example:8443/p?q=1") == "https://h.example:8443/p?q=1"
    assert without_credentials("https://h.example/p") == "https://h.example/p"
