"""A journey per workload kind in headless Chromium: launch from the form (htmx checks and the
quota preview), watch it become ready (the tests play Flux and KServe on the Kubernetes API
emulator), use its connection details, delete it. Screenshots land in artifacts/screenshots/."""

import pytest

from tenants.workloads.models import Workload, WorkloadStatus
from tenants.workloads.services.reconcile import workloads_reconcile_sweep
from tests.factories import TEST_PASSWORD
from tests.support.fixtures_browser import screenshot, sign_in
from tests.support.fixtures_celery import wait_until

from .conftest import H100, ready_helm_release, ready_inference_service

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def acme(tenant, tenant_member, gpu_pool, workload_quota):
    workload_quota()
    return tenant


def _delete(page, name: str) -> None:
    page.click("#delete")
    page.fill('input[name="confirm"]', name)
    screenshot(page, f"workload-{name}-delete-confirm")
    with page.expect_navigation():
        page.click("button[type=submit].btn-danger")


def test_an_inference_endpoint_from_launch_to_delete(acme, page, live_server, kube_gateway,
                                                     kube_emulator):
    sign_in(page, "member", TEST_PASSWORD)
    page.goto("/t/acme/workloads/")
    assert "Nothing runs in" in page.locator("#workloads").inner_text()
    page.click("#launch")
    page.click('[data-kind="inference"] a')
    page.fill("#id_name", "chat")
    page.fill("#id_model_uri", "hf://meta-llama/Llama-3.1-8B-Instruct")
    page.select_option("#id_gpu", H100)
    page.fill("#id_max_replicas", "9")
    page.locator("#id_max_replicas").blur()
    page.locator('#quota-preview [data-resource="gpu:nvidia-h100-80gb"][data-fits="false"]'
                 ).wait_for()
    page.fill("#id_max_replicas", "2")
    page.locator("#id_max_replicas").blur()
    page.locator('#quota-preview [data-resource="gpu:nvidia-h100-80gb"][data-fits="true"]'
                 ).wait_for()
    screenshot(page, "workload-inference-launch")
    with page.expect_navigation():
        page.click("#launch-submit")
    workload = Workload.objects.get(name="chat")
    assert page.locator("#workload-status").get_attribute("data-status") in (
        "pending", "provisioning"
    )
    screenshot(page, "workload-inference-provisioning")

    _applied(kube_emulator, "serving.kserve.io/v1beta1", "InferenceService", "chat",
             acme.namespace)
    ready_inference_service(kube_emulator, name="chat", namespace=acme.namespace)
    page.locator('#workload-status[data-status="ready"]').wait_for(timeout=20_000)
    connection = page.locator("#connection").inner_text()
    assert "/v1/chat/completions" in connection and "curl" in connection
    screenshot(page, "workload-inference-ready")

    _delete(page, "chat")
    wait_until(lambda: Workload.objects.get(pk=workload.pk).status == WorkloadStatus.DELETED,
               timeout=20)
    page.locator('#workload-status[data-status="deleted"]').wait_for(timeout=20_000)
    screenshot(page, "workload-inference-deleted")


def _applied(kube_emulator, api_version: str, kind: str, name: str, namespace: str) -> dict:
    """The object the launch applied. A machine too loaded for the first apply (a transient
    timeout of the emulator) leaves it to the periodic sweep, whose pass is run here as beat
    would run it."""
    def found():
        applied = kube_emulator.get_object(api_version, kind, name, namespace)
        if applied is None:
            workloads_reconcile_sweep()
        return applied
    return wait_until(found, timeout=20, every=0.5)


def test_a_vcluster_from_launch_to_kubeconfig_to_delete(acme, page, live_server, kube_gateway,
                                                        kube_emulator):
    sign_in(page, "member", TEST_PASSWORD)
    page.goto("/t/acme/workloads/new/vcluster/")
    page.fill("#id_name", "dev")
    page.locator('#quota-preview [data-resource="count:vcluster"]').wait_for()
    with page.expect_navigation():
        page.click("#launch-submit")
    release = _applied(kube_emulator, "helm.toolkit.fluxcd.io/v2", "HelmRelease", "dev",
                       acme.namespace)
    server = release["spec"]["values"]["exportKubeConfig"]["server"]
    ready_helm_release(kube_emulator, name="dev", namespace=acme.namespace, server=server)
    page.locator('#workload-status[data-status="ready"]').wait_for(timeout=20_000)
    screenshot(page, "workload-vcluster-ready")

    with page.expect_download() as download:
        page.click("#kubeconfig")
    kubeconfig = open(download.value.path()).read()  # noqa: SIM115 - read once
    assert f"server: {server}" in kubeconfig

    page.goto("/t/acme/workloads/")
    assert page.locator('[data-kind="vcluster"] [data-status="ready"]').is_visible()
    screenshot(page, "workload-list")
    page.goto(f"/t/acme/workloads/{Workload.objects.get(name='dev').pk}/")
    _delete(page, "dev")
    page.locator('#workload-status[data-status="deleted"]').wait_for(timeout=20_000)


def test_a_virtual_machine_from_launch_to_stop_and_start_to_delete(
    acme, page, live_server, kube_gateway, kube_emulator
):
    from .conftest import run_vm, ssh_public_key

    sign_in(page, "member", TEST_PASSWORD)
    page.goto("/t/acme/workloads/new/vm/")
    page.fill("#id_name", "box")
    page.select_option("#id_image", "__custom__")
    page.fill("#id_custom_image", "quay.io/containerdisks/ubuntu:24.04")
    page.fill("#id_default_user", "ubuntu")
    page.select_option("#id_gpu", H100)
    page.fill("#id_ssh_public_key", "ssh-ed25519 not-a-key")
    page.locator("#id_ssh_public_key").blur()
    page.locator('[data-error-for="ssh_public_key"]').wait_for()
    page.fill("#id_ssh_public_key", ssh_public_key())
    page.locator("#id_ssh_public_key").blur()
    page.locator('[data-error-for="ssh_public_key"]').wait_for(state="detached")
    screenshot(page, "workload-vm-launch")
    with page.expect_navigation():
        page.click("#launch-submit")
    run_vm(kube_emulator, name="box", namespace=acme.namespace)
    page.locator('#workload-status[data-status="ready"]').wait_for(timeout=20_000)
    assert "ssh ubuntu@10.244.3.17" in page.locator("#connection").inner_text()
    screenshot(page, "workload-vm-ready")

    page.click('#power button[value="stop"]')
    with page.expect_navigation():
        page.click("button[type=submit].btn-danger")
    run_vm(kube_emulator, name="box", namespace=acme.namespace, running=False)
    page.locator('#power button[value="start"]').wait_for()
    screenshot(page, "workload-vm-stopped")
    with page.expect_navigation():
        page.click('#power button[value="start"]')
    _delete(page, "box")
    page.locator("#workload-status", has_text="VirtualMachineInstance box").wait_for()
    # Play Kubernetes' garbage collector: the VMI goes with the VM that owns it.
    kube_gateway.delete(api_version="kubevirt.io/v1", kind="VirtualMachineInstance", name="box",
                        namespace=acme.namespace)
    page.locator('#workload-status[data-status="deleted"]').wait_for(timeout=20_000)


def test_a_slurm_cluster_from_launch_to_scale_to_delete(acme, page, live_server, kube_gateway,
                                                        kube_emulator):
    from .conftest import run_slurm

    sign_in(page, "member", TEST_PASSWORD)
    page.goto("/t/acme/workloads/new/slurm/")
    page.fill("#id_name", "hpc")
    page.select_option("#id_gpu", H100)
    page.fill("#id_workers", "2")
    page.locator("#id_workers").blur()
    page.locator('#quota-preview [data-resource="gpu:nvidia-h100-80gb"]').wait_for()
    with page.expect_navigation():
        page.click("#launch-submit")
    workload = Workload.objects.get(name="hpc")
    labels = {"portal.ai-factory.io/workload-id": str(workload.pk),
              "app.kubernetes.io/managed-by": "ai-factory-portal"}
    run_slurm(kube_emulator, ctx_name="hpc", namespace=acme.namespace, workers=2, labels=labels)
    page.locator('#workload-status[data-status="ready"]').wait_for(timeout=20_000)
    assert "sbatch" in page.locator("#connection").inner_text()
    screenshot(page, "workload-slurm-ready")

    page.fill("#scale #id_workers", "9")
    with page.expect_navigation():
        page.click("#scale-submit")
    assert "are left" in page.locator("#scale").inner_text()  # beyond the quota: refused
    page.fill("#scale #id_workers", "3")
    with page.expect_navigation():
        page.click("#scale-submit")
    workload.refresh_from_db()
    assert workload.spec["workers"] == 3
    _delete(page, "hpc")
