"""Merging a vCluster's kubeconfig into the user's: other contexts kept, only portalctl's own
entry replaced, a backup first, the file private; --use switches the current context."""

import stat

import pytest
import yaml

from portalctl.exits import CliError
from portalctl.kubeconfig import kubeconfig_path, merge_into_file

VCLUSTER = """apiVersion: v1
kind: Config
clusters:
- name: my-vcluster
  cluster: {server: "https://dev.tenant-acme.svc:443", certificate-authority-data: Q0E=}
contexts:
- name: my-vcluster
  context: {cluster: my-vcluster, user: my-vcluster, namespace: default}
current-context: my-vcluster
users:
- name: my-vcluster
  user: {client-certificate-data: Q0VSVA==, client-key-data: S0VZ}
"""
MINE = {
    "apiVersion": "v1", "kind": "Config", "current-context": "prod",
    "clusters": [{"name": "prod", "cluster": {"server": "https://prod.example.com"}}],
    "users": [{"name": "prod", "user": {"token": "keep-me"}}],
    "contexts": [{"name": "prod", "context": {"cluster": "prod", "user": "prod"}}],
}


@pytest.fixture
def kubeconfig(tmp_path, monkeypatch):
    path = tmp_path / "kube" / "config"
    path.parent.mkdir()
    path.write_text(yaml.safe_dump(MINE))
    monkeypatch.setenv("KUBECONFIG", f"{path}:{tmp_path / 'other'}")
    return path


def test_the_first_kubeconfig_file_is_the_one_written(kubeconfig):
    assert kubeconfig_path() == kubeconfig


def test_a_merge_adds_the_vcluster_beside_the_others_and_backs_up(kubeconfig):
    path, backup = merge_into_file(VCLUSTER, name="acme-dev", use=False)

    merged = yaml.safe_load(path.read_text())
    assert [c["name"] for c in merged["contexts"]] == ["prod", "acme-dev"]
    assert merged["current-context"] == "prod"
    context = next(c for c in merged["contexts"] if c["name"] == "acme-dev")["context"]
    assert context == {"cluster": "acme-dev", "user": "acme-dev", "namespace": "default"}
    assert next(u for u in merged["users"] if u["name"] == "prod")["user"] == {"token": "keep-me"}
    assert next(c for c in merged["clusters"] if c["name"] == "acme-dev")["cluster"]["server"] \
        == "https://dev.tenant-acme.svc:443"
    assert yaml.safe_load(backup.read_text()) == MINE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(backup.stat().st_mode) == 0o600


def test_merging_again_replaces_only_its_own_entry_and_use_switches(kubeconfig):
    merge_into_file(VCLUSTER, name="acme-dev", use=False)
    again = VCLUSTER.replace("dev.tenant-acme.svc", "dev2.tenant-acme.svc")

    path, _ = merge_into_file(again, name="acme-dev", use=True)

    merged = yaml.safe_load(path.read_text())
    assert sorted(c["name"] for c in merged["clusters"]) == ["acme-dev", "prod"]
    assert merged["current-context"] == "acme-dev"
    assert "dev2" in next(c for c in merged["clusters"] if c["name"] == "acme-dev")["cluster"][
        "server"]


def test_a_new_kubeconfig_file_gets_the_context_as_current(tmp_path, monkeypatch):
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "new" / "config"))

    path, backup = merge_into_file(VCLUSTER, name="acme-dev", use=False)

    assert backup is None
    assert yaml.safe_load(path.read_text())["current-context"] == "acme-dev"


def test_a_broken_kubeconfig_is_left_alone(kubeconfig):
    kubeconfig.write_text("clusters: [unclosed")

    with pytest.raises(CliError, match="not valid YAML"):
        merge_into_file(VCLUSTER, name="acme-dev", use=False)

    assert kubeconfig.read_text() == "clusters: [unclosed"


def test_a_symlinked_kubeconfig_stays_a_link_and_its_target_is_written(tmp_path, monkeypatch):
    real = tmp_path / "dotfiles" / "kubeconfig"
    real.parent.mkdir()
    real.write_text(yaml.safe_dump(MINE))
    link = tmp_path / "kube" / "config"
    link.parent.mkdir()
    link.symlink_to(real)
    monkeypatch.setenv("KUBECONFIG", str(link))

    _, backup = merge_into_file(VCLUSTER, name="acme-dev", use=False)

    assert link.is_symlink() and link.resolve() == real
    assert "acme-dev" in [c["name"] for c in yaml.safe_load(real.read_text())["contexts"]]
    assert backup == real.with_name("kubeconfig.portalctl.bak")
    assert yaml.safe_load(backup.read_text()) == MINE
    assert sorted(p.name for p in link.parent.iterdir()) == ["config"]
    assert stat.S_IMODE(real.stat().st_mode) == 0o600


def test_the_first_backup_is_kept_by_later_merges(kubeconfig):
    merge_into_file(VCLUSTER, name="acme-dev", use=False)

    _, backup = merge_into_file(VCLUSTER, name="acme-other", use=True)

    assert yaml.safe_load(backup.read_text()) == MINE
    assert stat.S_IMODE(backup.stat().st_mode) == 0o600


@pytest.mark.parametrize("entries", [{"prod": {"token": "x"}}, ["prod"], "prod"])
def test_a_kubeconfig_whose_entries_are_not_mappings_is_an_error(kubeconfig, entries):
    kubeconfig.write_text(yaml.safe_dump({**MINE, "users": entries}))

    with pytest.raises(CliError, match="users must be a list of mappings"):
        merge_into_file(VCLUSTER, name="acme-dev", use=False)


def test_a_vcluster_kubeconfig_whose_context_is_not_a_mapping_is_an_error(kubeconfig):
    broken = VCLUSTER.replace(
        "context: {cluster: my-vcluster, user: my-vcluster, namespace: default}",
        "context: my-vcluster")

    with pytest.raises(CliError, match="context must be a mapping"):
        merge_into_file(broken, name="acme-dev", use=False)


def test_a_kubeconfig_that_cannot_be_read_is_an_error(kubeconfig):
    kubeconfig.write_bytes(b"\xff\xfe not utf-8")
    with pytest.raises(CliError, match="Cannot read"):
        merge_into_file(VCLUSTER, name="acme-dev", use=False)

    kubeconfig.unlink()
    kubeconfig.mkdir()
    with pytest.raises(CliError, match="Cannot read"):
        merge_into_file(VCLUSTER, name="acme-dev", use=False)
