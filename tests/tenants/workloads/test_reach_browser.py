"""From a laptop, in headless Chromium: a vCluster's page gives a kubeconfig through the fleet's
Gateway that signs in with `kubectl oidc-login`, and a VM's page `ssh` to its load balancer
address; the copy buttons put exactly those commands on the clipboard. Screenshots land in
artifacts/screenshots/."""

import pytest
import yaml

from tenants.workloads import services
from tests.factories import TEST_PASSWORD
from tests.support.fixtures_browser import VIEWPORT, screenshot, sign_in

from .conftest import VCLUSTER_SPEC, VM_SPEC, observed, ready_helm_release, run_vm, ssh_public_key

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def browser_context_options() -> dict:
    return {"viewport": VIEWPORT, "locale": "en-US", "timezone_id": "UTC",
            "permissions": ["clipboard-read", "clipboard-write"]}


@pytest.fixture
def acme(tenant, tenant_member, gpu_pool, workload_quota, settings):
    settings.VCLUSTER_DOMAIN = "vc.example.com"
    settings.OIDC_ISSUER_URL = "https://sso.example.com/realms/ai-factory"
    settings.SSH_LOAD_BALANCER = True
    workload_quota()
    return tenant


def copied(page, label: str) -> str:
    """Click the copy button of the command labelled `label`; what the clipboard then holds."""
    label_id = page.locator(".small.text-muted", has_text=label).first.get_attribute("id")
    button = page.locator(f'button[aria-describedby="{label_id}"]')
    button.click()
    page.locator(f'button[aria-describedby="{label_id}"][data-copied="true"]').wait_for()
    return page.evaluate("navigator.clipboard.readText()")


def test_a_vclusters_kubeconfig_and_a_vms_ssh_are_copied_from_their_pages(
    acme, tenant_member, page, live_server, kube_gateway, kube_emulator
):
    dev = services.workload_launch(tenant=acme, actor=tenant_member, kind="vcluster",
                                   name="dev", spec=VCLUSTER_SPEC)
    services.workload_reconcile(workload_id=dev.pk)
    release = kube_emulator.get_object("helm.toolkit.fluxcd.io/v2", "HelmRelease", "dev",
                                       acme.namespace)
    ready_helm_release(kube_emulator, name="dev", namespace=acme.namespace,
                       server=release["spec"]["values"]["exportKubeConfig"]["server"])
    observed(dev)
    box = services.workload_launch(tenant=acme, actor=tenant_member, kind="vm", name="box",
                                   spec={**VM_SPEC, "ssh_public_key": ssh_public_key()})
    services.workload_reconcile(workload_id=box.pk)
    run_vm(kube_emulator, name="box", namespace=acme.namespace)
    kube_emulator.patch_object("v1", "Service", "box-ssh", acme.namespace, patch={
        "status": {"loadBalancer": {"ingress": [{"ip": "203.0.113.40"}]}}})
    observed(box)

    sign_in(page, "member", TEST_PASSWORD)
    page.goto(f"/t/acme/workloads/{dev.pk}/")
    page.locator("#connection").wait_for()
    kubeconfig = copied(page, "Save this kubeconfig as vcluster-dev.yaml")
    screenshot(page, "workload-vcluster-outside-kubeconfig")
    check = copied(page, "Sign in with your Keycloak account and use it")

    head, _, rest = kubeconfig.partition("\n")
    assert head == "cat > vcluster-dev.yaml <<'EOF'"
    config = yaml.safe_load(rest.rsplit("EOF", 1)[0])
    assert config["clusters"][0]["cluster"]["server"] == "https://dev.tenant-acme.vc.example.com"
    assert config["users"][0]["user"]["exec"]["args"][:2] == ["oidc-login", "get-token"]
    assert check == "kubectl --kubeconfig vcluster-dev.yaml get namespaces"

    page.goto(f"/t/acme/workloads/{box.pk}/")
    page.locator("#connection").wait_for()
    assert copied(page, "SSH from your machine") == "ssh ubuntu@203.0.113.40"
    screenshot(page, "workload-vm-outside-ssh")
