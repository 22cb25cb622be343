"""The workload pages tell the truth (issue 29, items 9 to 11), seen from the tenant's side: the
pages through the test client, the simulated fleet through the same services the pages use.

- a stopped VM's badge says Stopped (list, detail, dashboard), not Ready;
- a failed endpoint's advice fits its cause (a wrong model URI: relaunch, not resize), and the
  quota it still holds is shown with a one-click delete;
- the inference endpoint page says what it serves: model URI, runtime, GPUs per replica.
"""

import pytest

from tenants.workloads import services
from tenants.workloads.models import VmImage, WorkloadStatus

from .conftest import H100, INFERENCE_SPEC, observed
from .openssh_keys import ed25519_public

S = WorkloadStatus
VM_SPEC = {"image": "ubuntu", "cpu": 2, "memory_gib": 8, "disk_gib": 20, "gpu": H100, "gpus": 1,
           "ssh_public_key": ed25519_public("alice@laptop")}


@pytest.fixture
def fleet(settings, tenant, gpu_pool, workload_quota, fleet_clock):
    settings.FLEET_SIMULATED_READY_SECONDS = 20
    workload_quota(**{"cpu": 64, "memory-gib": 512})
    VmImage.objects.create(key="ubuntu", label="Ubuntu 24.04 LTS", default_user="ubuntu",
                           container_disk="quay.io/containerdisks/ubuntu:24.04", min_disk_gib=10)
    return fleet_clock


@pytest.fixture
def member(login, tenant_member):
    return login(tenant_member)



@pytest.mark.django_db
def test_a_stopped_vm_is_stopped_on_every_page_not_ready(fleet, tenant, tenant_member, member):
    vm = services.workload_launch(tenant=tenant, actor=tenant_member, kind="vm", name="box",
                                  spec=VM_SPEC)
    services.workload_reconcile(workload_id=vm.pk)
    fleet.advance(20)
    assert observed(vm).status == S.READY
    running = member.get(f"/t/acme/workloads/{vm.pk}/").content.decode()
    assert 'data-status="ready">Ready' in running and 'data-status="stopped"' not in running

    services.workload_power(workload_id=vm.pk, actor=tenant_member, action="stop")
    services.workload_reconcile(workload_id=vm.pk)
    vm.refresh_from_db()
    assert vm.details["printable_status"] == "Stopped"

    detail = member.get(f"/t/acme/workloads/{vm.pk}/").content.decode()
    listing = member.get("/t/acme/workloads/").content.decode()
    dashboard = member.get("/t/acme/").content.decode()
    for page in (detail, listing, dashboard):
        assert 'data-status="stopped">Stopped</span>' in page
        assert 'data-status="ready">Ready' not in page
    assert "its disk is kept" in detail

    services.workload_power(workload_id=vm.pk, actor=tenant_member, action="start")
    services.workload_reconcile(workload_id=vm.pk)
    fleet.advance(10)
    observed(vm)
    again = member.get("/t/acme/workloads/").content.decode()
    assert 'data-status="ready">Ready' in again and 'data-status="stopped"' not in again


@pytest.mark.django_db
def test_a_wrong_model_uri_is_fixed_by_relaunching_and_its_quota_deleted_in_one_click(
    fleet, tenant, tenant_member, member
):
    spec = {**INFERENCE_SPEC, "model_uri": "hf://meta-llama/Llama-9-does-not-exist"}
    endpoint = services.workload_launch(tenant=tenant, actor=tenant_member, kind="inference",
                                        name="typo", spec=spec)
    services.workload_reconcile(workload_id=endpoint.pk)
    fleet.advance(20)
    assert observed(endpoint).status == S.FAILED

    page = member.get(f"/t/acme/workloads/{endpoint.pk}/").content.decode()
    advice = page.split('id="failure-advice">', 1)[1].split("</div>", 1)[0]
    assert "model URI" in advice and "launch a new one" in advice
    assert "Resizing or scaling will not help" in advice
    assert "Fix it by resizing" not in page
    held = page.split('id="failure-held">', 1)[1].split("</div>", 1)[0]
    assert "2 \u00d7 NVIDIA H100 80GB HBM3" in held and "of your quota" in held
    assert 'id="failure-delete"' in page

    # One click: the button's form carries its confirmation, so no second page is asked.
    form = page.split('id="failure-held">', 1)[1].split("</form>", 1)[0]
    confirm = form.split('name="confirm" value="', 1)[1].split('"', 1)[0]
    response = member.post(f"/t/acme/workloads/{endpoint.pk}/delete/", {"confirm": confirm})
    assert response.status_code == 302
    endpoint.refresh_from_db()
    assert endpoint.status in (S.DELETING, S.DELETED)


@pytest.mark.django_db
def test_a_viewer_sees_the_advice_but_no_delete_button(
    fleet, tenant, tenant_member, tenant_viewer, login
):
    spec = {**INFERENCE_SPEC, "model_uri": "hf://meta-llama/Llama-9-does-not-exist"}
    endpoint = services.workload_launch(tenant=tenant, actor=tenant_member, kind="inference",
                                        name="typo", spec=spec)
    services.workload_reconcile(workload_id=endpoint.pk)
    fleet.advance(20)
    observed(endpoint)
    page = login(tenant_viewer).get(f"/t/acme/workloads/{endpoint.pk}/").content.decode()
    assert 'id="failure-advice"' in page and 'id="failure-delete"' not in page


@pytest.mark.django_db
def test_the_endpoint_page_says_what_it_serves_before_and_after_kserve_reports(
    fleet, tenant, tenant_member, member
):
    endpoint = services.workload_launch(
        tenant=tenant, actor=tenant_member, kind="inference", name="chat",
        spec={**INFERENCE_SPEC, "gpus_per_replica": 2, "max_replicas": 1},
    )
    for moment in ("pending", "ready"):
        if moment == "ready":
            services.workload_reconcile(workload_id=endpoint.pk)
            fleet.advance(20)
            assert observed(endpoint).status == S.READY
        page = member.get(f"/t/acme/workloads/{endpoint.pk}/").content.decode()
        assert '<dd class="col-sm-8 text-break" data-serves="model-uri"><code>' \
            "hf://meta-llama/Llama-3.1-8B-Instruct</code></dd>" in page, moment
        assert 'data-serves="runtime">vLLM (kserve-vllmserver)</dd>' in page
        assert 'data-serves="gpus-per-replica">2</dd>' in page
        assert 'data-serves="gpu">NVIDIA H100 80GB HBM3 GPUs</dd>' in page
        assert page.count(">Runtime</dt>") == 1
