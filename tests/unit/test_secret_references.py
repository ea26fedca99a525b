"""``validate`` resolves every secret reference before anything starts, never prints a value, and
``--no-secrets`` skips only that check (a CI lint job holds no secrets)."""

from __future__ import annotations

from mirrordrill.harness.cli import commands as cli
from tests.unit.test_bad_drill_files import _secured

UNSET = "MIRRORDRILL_TEST_UNSET_PASSWORD"
SECRET = "s3cr3t-value-never-printed"


def test_an_unset_variable_passes_with_no_secrets_and_fails_without(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv(UNSET, raising=False)
    path = tmp_path / "drill.yaml"
    path.write_text(_secured("${env:" + UNSET + "}"))
    assert cli.main(["validate", str(path), "--no-secrets"]) == cli.EXIT_OK, capsys.readouterr().err
    capsys.readouterr()
    assert cli.main(["validate", str(path)]) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert f"{path}:7: clusters.primary.security.password: ${{env:{UNSET}}}: environment variable {UNSET} is not set" \
        in err, err


def test_a_set_variable_validates_and_no_value_is_printed(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("MIRRORDRILL_TEST_PASSWORD", SECRET)
    path = tmp_path / "drill.yaml"
    path.write_text(_secured("${env:MIRRORDRILL_TEST_PASSWORD}"))
    assert cli.main(["validate", str(path)]) == cli.EXIT_OK
    out = capsys.readouterr()
    assert SECRET not in out.out + out.err


def test_a_missing_key_names_the_file_and_its_keys_never_their_values(tmp_path, capsys):
    (tmp_path / "creds.properties").write_text(f"password={SECRET}\n")
    path = tmp_path / "drill.yaml"
    path.write_text(_secured("${file:creds.properties:pasword}"))  # relative to the drill file's folder
    assert cli.main(["validate", str(path)]) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert "has no key 'pasword' (keys there: password)" in err, err
    assert SECRET not in err


def test_a_random_password_if_unset_needs_no_variable(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv(UNSET, raising=False)
    path = tmp_path / "drill.yaml"
    path.write_text(_secured("${env:" + UNSET + "}").replace("SASL_SSL\n", "SASL_SSL\n      random_password_if_unset: true\n"))
    assert cli.main(["validate", str(path)]) == cli.EXIT_OK, capsys.readouterr().err
