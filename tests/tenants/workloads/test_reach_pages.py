"""The detail page of a vCluster and a VM reached from a laptop, through the real Kubernetes
gateway against the emulator: the vCluster's TLSRoute is applied on the fleet Gateway's
listener, and its page shows a kubeconfig that signs in with `kubectl oidc-login`; the VM's
SSH Service, once the load balancer gave it an address, puts `ssh user@<address>` on its page;
each command with a copy button. A cluster without the Gateway API still observes vClusters."""

import html as html_lib
import re

import pytest
import yaml

from core.fleet import PermanentFleetError, gateway_override
from demo.fleet.simulated import SimulatedFleetGateway
from tenants.workloads import services

from .conftest import VCLUSTER_SPEC, VM_SPEC, observed, ready_helm_release, run_vm, ssh_public_key

ISSUER = "https://sso.example.com/realms/ai-factory"


@pytest.fixture
def member(login, tenant_member, gpu_pool, workload_quota, settings):
    settings.VCLUSTER_DOMAIN = "vc.example.com"
    settings.OIDC_ISSUER_URL = ISSUER
    settings.SSH_LOAD_BALANCER = True
    workload_quota()
    return login(tenant_member)


def commands(page: str) -> dict[str, str]:
    """Each command's label and text, by the ids the copy buttons point at."""
    labels = dict(re.findall(r'id="(command-\d+)-label">([^<]*)<', page))
    texts = dict(re.findall(r'<pre[^>]*id="(command-\d+)"><code>(.*?)</code></pre>', page, re.S))
    for target in re.findall(r'data-copy="(command-\d+)"', page):
        assert target in texts  # every button copies a command shown
    return {html_lib.unescape(labels[k]): html_lib.unescape(v) for k, v in texts.items()}


@pytest.mark.django_db
def test_a_vclusters_page_shows_a_kubeconfig_through_the_gateway_with_kubelogin(
    member, tenant, tenant_member, kube_gateway, kube_emulator
):
    workload = services.workload_launch(tenant=tenant, actor=tenant_member, kind="vcluster",
                                        name="dev", spec=VCLUSTER_SPEC)
    services.workload_reconcile(workload_id=workload.pk)
    route = kube_emulator.get_object("gateway.networking.k8s.io/v1", "TLSRoute", "dev",
                                     tenant.namespace)
    release = kube_emulator.get_object("helm.toolkit.fluxcd.io/v2", "HelmRelease", "dev",
                                       tenant.namespace)
    server = release["spec"]["values"]["exportKubeConfig"]["server"]
    ready_helm_release(kube_emulator, name="dev", namespace=tenant.namespace, server=server)
    assert observed(workload).status == "ready"

    page = member.get(f"/t/acme/workloads/{workload.pk}/").content.decode()

    host = "dev.tenant-acme.vc.example.com"
    assert route["spec"]["hostnames"] == [host]
    assert server == f"https://{host}"
    shown = commands(page)
    saved = shown["Save this kubeconfig as vcluster-dev.yaml"]
    config = yaml.safe_load(saved.split("\n", 1)[1].rsplit("EOF", 1)[0])
    assert config["clusters"][0]["cluster"]["server"] == f"https://{host}"
    assert config["users"][0]["user"]["exec"]["args"][:2] == ["oidc-login", "get-token"]
    assert f"--oidc-issuer-url={ISSUER}" in config["users"][0]["user"]["exec"]["args"]
    assert shown["Sign in with your Keycloak account and use it"] == (
        "kubectl --kubeconfig vcluster-dev.yaml get namespaces"
    )
    assert "user: {token: x}" not in page and "token: x" not in page  # admin credentials


@pytest.mark.django_db
def test_a_vms_page_shows_ssh_to_its_load_balancer_address(
    member, tenant, tenant_member, kube_gateway, kube_emulator
):
    workload = services.workload_launch(
        tenant=tenant, actor=tenant_member, kind="vm", name="box",
        spec={**VM_SPEC, "ssh_public_key": ssh_public_key()},
    )
    services.workload_reconcile(workload_id=workload.pk)
    run_vm(kube_emulator, name="box", namespace=tenant.namespace)
    waiting = observed(workload)
    assert "box-ssh has no external address yet" in " ".join(waiting.connection["notes"])
    kube_emulator.patch_object("v1", "Service", "box-ssh", tenant.namespace, patch={
        "status": {"loadBalancer": {"ingress": [{"ip": "203.0.113.40"}]}}})
    observed(workload)

    page = member.get(f"/t/acme/workloads/{workload.pk}/").content.decode()

    assert commands(page)["SSH from your machine"] == "ssh ubuntu@203.0.113.40"
    # The API answers the same connection.
    body = member.get(f"/api/v1/workloads/{workload.pk}/").json()
    assert {"label": "SSH from your machine", "command": "ssh ubuntu@203.0.113.40"} in (
        body["connection"]["commands"]
    )


class _NoGatewayApi(SimulatedFleetGateway):
    """A cluster without the Gateway API's CRDs: listing TLSRoutes is a 404, as the Kubernetes
    gateway answers for a kind the cluster does not serve."""

    def list(self, *, api_version, kind, **kwargs):
        if kind == "TLSRoute":
            raise PermanentFleetError("the cluster serves no such kind: TLSRoute", status=404)
        return super().list(api_version=api_version, kind=kind, **kwargs)


@pytest.mark.django_db
def test_a_cluster_without_the_gateway_api_still_observes_vclusters(
    tenant, tenant_member, gpu_pool, workload_quota, settings
):
    settings.VCLUSTER_DOMAIN = ""
    workload_quota()
    with gateway_override(_NoGatewayApi()):
        workload = services.workload_launch(tenant=tenant, actor=tenant_member, kind="vcluster",
                                            name="dev", spec=VCLUSTER_SPEC)
        services.workload_reconcile(workload_id=workload.pk)
        seen = observed(workload)

    assert seen.observed["state"] == "progressing"
