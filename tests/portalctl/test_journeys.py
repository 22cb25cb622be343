"""portalctl's journeys against a live portal and the test OpenID Connect provider: sign in
with the device authorization grant, choose a tenant, launch a vCluster on the simulated fleet,
wait until it is ready, merge its kubeconfig, delete it; finance downloads an invoice; and the
exit codes scripts rely on."""

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from billing.services import invoicing
from core.tokens import api_token_create
from tests.billing.finance_data import JAN, bill
from tests.support.oidc_provider import device_sign_in
from tests.tenants.workloads.conftest import gpu_pool, workload_quota  # noqa: F401

from .test_kubeconfig_merge import MINE as PROD

pytestmark = pytest.mark.django_db(transaction=True)

ROOT = Path(__file__).resolve().parents[2]
FAST = ("--interval", "0.2", "--timeout", "30")


@pytest.fixture
def fleet(settings, tenant, gpu_pool, workload_quota, simulated_gateway):  # noqa: F811
    """Acme's quota on the simulated fleet, whose controllers are done after a second."""
    settings.FLEET_SIMULATED_READY_SECONDS = 1
    workload_quota()
    return simulated_gateway


def sign_in_by_device(live_server, keycloak, cli_home, username: str) -> dict:
    """`portalctl login` as its own process; the person opens the link it shows and signs in."""
    env = {**os.environ, "XDG_CONFIG_HOME": str(cli_home / "config")}
    env.pop("PORTALCTL_TOKEN", None)
    process = subprocess.Popen(
        # No --issuer: the portal names its issuer and client at /.well-known/portalctl.json.
        [sys.executable, "-m", "portalctl", "login", "--server", live_server.url, "-o", "json"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        shown = []
        for line in process.stderr:
            shown.append(line)
            if line.strip().startswith("http"):
                device_sign_in(line.strip(), username)
                break
        out, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=5)
    assert process.returncode == 0, "".join(shown) + err
    return json.loads(out)


def test_sign_in_launch_wait_merge_the_kubeconfig_and_delete(
    live_server, keycloak, fleet, cli_home, portalctl
):
    me = sign_in_by_device(live_server, keycloak, cli_home, "olga")

    assert me["username"] == "olga" and me["tenants"] == {"acme": "owner"}
    folder = cli_home / "config" / "portalctl"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    for name in ("config.json", "credentials.json"):
        assert stat.S_IMODE((folder / name).stat().st_mode) == 0o600
    assert portalctl("whoami", "-o", "json").json()["username"] == "olga"
    # An access token about to expire is renewed with the refresh token, and kept.
    credentials = folder / "credentials.json"
    stored = json.loads(credentials.read_text())
    credentials.write_text(json.dumps({**stored, "expires_at": 0}))
    assert portalctl("whoami", "-o", "json").json()["username"] == "olga"
    renewed = json.loads(credentials.read_text())
    assert renewed["access_token"] != stored["access_token"] and renewed["expires_at"] > 0

    used = portalctl("tenants", "use", "acme")
    assert used.code == 0, used.stderr
    assert json.loads((folder / "config.json").read_text())["tenant"] == "acme"
    assert json.loads((folder / "config.json").read_text())["server"] == live_server.url

    launched = portalctl("workloads", "launch", "vcluster", "dev", "--set", "cpu=2",
                         "--label", "llm-finetune", "-o", "json")
    assert launched.code == 0, launched.stderr
    assert launched.json()["status"] in {"pending", "provisioning"}
    assert launched.json()["spec"]["cpu"] == 2
    assert launched.json()["label"] == "llm-finetune"
    by_label = portalctl("workloads", "list", "--label", "llm-finetune", "-o", "json")
    assert [w["name"] for w in by_label.json()] == ["dev"]
    assert portalctl("workloads", "list", "--label", "other", "-o", "json").json() == []

    ready = portalctl("workloads", "wait", "dev", *FAST, "-o", "json")
    assert ready.code == 0, ready.stderr
    assert ready.json()["status"] == "ready"

    kubeconfig = cli_home / "kube" / "config"
    kubeconfig.parent.mkdir()
    kubeconfig.write_text(yaml.safe_dump(PROD))
    merged = portalctl("kubeconfig", "dev", "--use", "-o", "yaml")
    assert merged.code == 0, merged.stderr
    assert yaml.safe_load(merged.stdout)["context"] == "acme-dev"
    config = yaml.safe_load(kubeconfig.read_text())
    assert [c["name"] for c in config["contexts"]] == ["prod", "acme-dev"]
    assert config["current-context"] == "acme-dev"
    assert yaml.safe_load(Path(f"{kubeconfig}.portalctl.bak").read_text()) == PROD

    gone = portalctl("workloads", "delete", "dev", "--wait", *FAST, "-o", "json")
    assert gone.code == 0, gone.stderr
    assert gone.json()["status"] == "deleted"
    assert portalctl("workloads", "list", "-o", "json").json() == []

    assert portalctl("logout").code == 0
    assert not (folder / "credentials.json").exists()
    assert portalctl("whoami").code == 4


def test_quota_spend_and_tenants_print_as_json_yaml_and_table(
    live_server, fleet, tenant_member, portalctl
):
    token = api_token_create(user=tenant_member, name="ci").raw
    run = {"token": token, "server": live_server.url}

    quota = portalctl("quota", "-t", "acme", "-o", "json", **run)
    assert quota.code == 0, quota.stderr
    assert {line["resource"] for line in quota.json()} >= {"gpu:nvidia-h100-80gb", "cpu"}
    spend = portalctl("spend", "-t", "acme", "-o", "yaml", **run)
    assert yaml.safe_load(spend.stdout)["tenant"] == "acme"
    table = portalctl("tenants", "list", **run)
    assert table.code == 0 and "acme" in table.stdout and "Acme Labs" in table.stdout

    # A token kept by login, for later commands without the environment.
    kept = portalctl("login", "--server", live_server.url, "--token", token, "-o", "json")
    assert kept.code == 0, kept.stderr
    assert kept.json()["username"] == tenant_member.username
    assert portalctl("tenants", "use", "acme").code == 0
    assert portalctl("quota", "-o", "json").json() == quota.json()


def test_finance_lists_and_downloads_an_invoice(live_server, tenant, finance, portalctl,
                                                tmp_path):
    invoice = invoicing.invoice_issue(invoice_id=bill(tenant, JAN, 10).pk, actor=finance)
    run = {"token": api_token_create(user=finance, name="books").raw, "server": live_server.url}

    listed = portalctl("invoices", "list", "--period", "2026-01", "-o", "json", **run)
    assert listed.code == 0, listed.stderr
    assert [row["number"] for row in listed.json()] == [invoice.number]

    pdf = portalctl("invoices", "download", str(invoice.pk), "--out", str(tmp_path), **run)
    assert pdf.code == 0, pdf.stderr
    written = list(tmp_path.glob("*.pdf"))
    assert len(written) == 1 and written[0].read_bytes().startswith(b"%PDF")
    csv = portalctl("invoices", "download", str(invoice.pk), "-F", "csv", "-o", "json",
                    "--out", str(tmp_path / "jan.csv"), **run)
    assert csv.json()["file"] == str(tmp_path / "jan.csv")
    assert invoice.number in (tmp_path / "jan.csv").read_text()


def test_exit_codes_and_the_apis_messages(live_server, fleet, tenant_member, tenant_viewer,
                                          settings, portalctl, tmp_path):
    member = {"token": api_token_create(user=tenant_member, name="ci").raw,
              "server": live_server.url}
    viewer = {"token": api_token_create(user=tenant_viewer, name="look").raw,
              "server": live_server.url}

    signed_out = portalctl("whoami", server=live_server.url)
    assert signed_out.code == 4 and "Not signed in" in signed_out.stderr
    refused = portalctl("whoami", token="afp_not-a-token", server=live_server.url)
    assert refused.code == 4 and "Invalid, expired or revoked API token." in refused.stderr

    missing = portalctl("workloads", "show", "999999", **member)
    assert missing.code == 3 and "Not found." in missing.stderr
    by_name = portalctl("workloads", "show", "nothing-here", "-t", "acme", **member)
    assert by_name.code == 3

    forbidden = portalctl("workloads", "launch", "vcluster", "dev", "-t", "acme", **viewer)
    assert forbidden.code == 4 and "permission" in forbidden.stderr

    invalid = portalctl("workloads", "launch", "vcluster", "Not_A_Label", "-t", "acme", **member)
    assert invalid.code == 6
    assert "The request has invalid fields." in invalid.stderr and "name:" in invalid.stderr

    assert portalctl("workloads", "launch", "-t", "acme", **member).code == 2
    assert portalctl("workloads", "wait", "x", "--for", "lunch", **member).code == 2

    failing = portalctl(
        "workloads", "launch", "inference", "chat", "-t", "acme", "--wait", *FAST,
        "--set", "model_uri=hf://acme/llama-does-not-exist", "--set", "gpu=gpu:nvidia-h100-80gb",
        **member)
    assert failing.code == 7, failing.stdout + failing.stderr
    assert "chat is failed" in failing.stderr

    broken = tmp_path / "broken.yaml"
    broken.write_text("kind: [vcluster")
    assert portalctl("workloads", "launch", "-f", str(broken), "-t", "acme", **member).code == 2

    settings.FLEET_SIMULATED_READY_SECONDS = 3600
    spec = tmp_path / "slow.yaml"
    spec.write_text("kind: vcluster\nname: slow\nspec: {cpu: 2, memory_gib: 4}\n")
    slow = portalctl("workloads", "launch", "-f", str(spec), "-t", "acme", "-o", "json",
                     **member)
    assert slow.code == 0, slow.stderr
    assert slow.json()["name"] == "slow" and slow.json()["spec"]["memory_gib"] == 4
    timed_out = portalctl("workloads", "wait", str(slow.json()["id"]), "--interval", "0.2",
                          "--timeout", "1", **member)
    assert timed_out.code == 5 and "still" in timed_out.stderr

    unreachable = portalctl("whoami", token="afp_x", server="http://127.0.0.1:9")
    assert unreachable.code == 8
