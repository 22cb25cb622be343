"""The demo's workloads: the simulated fleet drives every kind from pending to ready through the
real services (launch, reconcile, observe, scale, power, delete), fails an endpoint whose model
does not exist in KServe's words, and the demo data has workloads in every state."""

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.utils import timezone

from core.models import AuditEvent, OutboxEmail, SimulatedObject
from tenants.enforcement.manifests import tenant_manifests
from tenants.enforcement.services import tenant_spec
from tenants.workloads import services
from tenants.workloads.kinds import vcluster
from tenants.workloads.models import VmImage, Workload, WorkloadStatus

from .conftest import H100, INFERENCE_SPEC
from .openssh_keys import ed25519_public

S = WorkloadStatus
A100_MIG = "mig:nvidia-a100-80gb:1g.10gb"
VM_SPEC = {"image": "ubuntu", "cpu": 2, "memory_gib": 8, "disk_gib": 20, "gpu": H100, "gpus": 1,
           "ssh_public_key": ed25519_public("alice@laptop")}
SLURM_SPEC = {"workers": 1, "gpu": H100, "gpus_per_worker": 1, "cpu_per_worker": 2,
              "memory_gib_per_worker": 8, "accounting": True, "rest_api": True}
SPECS = {"vcluster": {}, "inference": INFERENCE_SPEC, "vm": VM_SPEC, "slurm": SLURM_SPEC}


@pytest.fixture
def fleet(settings, tenant, gpu_pool, workload_quota, fleet_clock):
    """The simulated fleet with a 20 s controller delay, its clock in the test's hands, and a
    tenant with quota and a boot image to launch from."""
    settings.FLEET_SIMULATED_READY_SECONDS = 20
    workload_quota(**{"cpu": 64, "memory-gib": 512})
    VmImage.objects.create(key="ubuntu", label="Ubuntu 24.04 LTS", default_user="ubuntu",
                           container_disk="quay.io/containerdisks/ubuntu:24.04", min_disk_gib=10)
    return fleet_clock


def launch(tenant, who, kind, name=None, spec=None) -> Workload:
    return services.workload_launch(tenant=tenant, actor=who, kind=kind, name=name or f"my-{kind}",
                                    spec=SPECS[kind] if spec is None else spec)


def status_of(workload: Workload) -> str:
    workload.refresh_from_db()
    return workload.status


def observe(workload: Workload) -> str:
    services.workload_observe(workload_id=workload.pk)
    return status_of(workload)


@pytest.mark.django_db
@pytest.mark.parametrize("kind", list(SPECS))
def test_each_kind_goes_from_pending_to_ready_on_the_simulated_fleet(
    kind, fleet, tenant, tenant_member
):
    workload = launch(tenant, tenant_member, kind)
    assert workload.status == S.PENDING

    services.workload_reconcile(workload_id=workload.pk)
    assert status_of(workload) == S.PROVISIONING
    fleet.advance(10)
    assert observe(workload) == S.PROVISIONING
    fleet.advance(10)
    services.workload_observe(workload_id=workload.pk)  # an operator's parts show up one read late

    assert observe(workload) == S.READY, (workload.status_reason, workload.status_message)
    assert workload.ready_at is not None
    assert workload.connection["items"]
    assert OutboxEmail.objects.filter(topic="workload.ready").count() == 1
    assert list(workload.events.values_list("to_status", flat=True).exclude(to_status="")) == [
        S.PENDING, S.PROVISIONING, S.READY
    ]


@pytest.mark.django_db
def test_a_ready_vclusters_kubeconfig_downloads_from_its_secret(fleet, tenant, tenant_member):
    workload = launch(tenant, tenant_member, "vcluster", name="dev")
    services.workload_reconcile(workload_id=workload.pk)
    fleet.advance(20)
    observe(workload)

    kubeconfig = services.workload_kubeconfig(workload=workload, actor=tenant_member)

    assert f"server: {vcluster.server_url('dev', tenant.namespace)}" in kubeconfig
    assert AuditEvent.objects.filter(action="workload.kubeconfig_download").count() == 1


@pytest.mark.django_db
def test_a_vm_stops_starts_and_restarts(fleet, tenant, tenant_member):
    workload = launch(tenant, tenant_member, "vm", name="box")
    services.workload_reconcile(workload_id=workload.pk)
    fleet.advance(20)
    assert observe(workload) == S.READY
    first_ip = workload.details["ip"]

    def power(action: str) -> str:
        services.workload_power(workload_id=workload.pk, actor=tenant_member, action=action)
        services.workload_reconcile(workload_id=workload.pk)
        return status_of(workload)

    assert power("stop") == S.READY
    assert workload.details["printable_status"] == "Stopped"
    assert workload.demand == {"storage-gib": 20, "count:vm": 1}  # no GPU held while stopped
    assert power("start") == S.PROVISIONING
    assert workload.details["printable_status"] == "Starting"
    fleet.advance(10)
    assert observe(workload) == S.READY
    second_ip = workload.details["ip"]

    assert power("restart") == S.PROVISIONING
    assert workload.status_reason == "Restarting"
    assert observe(workload) == S.PROVISIONING
    fleet.advance(10)
    assert observe(workload) == S.READY
    assert not workload.details["restart_pending"]
    assert len({first_ip, second_ip, workload.details["ip"]}) == 3  # a new guest each boot
    vmi = SimulatedObject.objects.get(kind="VirtualMachineInstance", name="box").body
    assert vmi["metadata"]["annotations"]["kubectl.kubernetes.io/restartedAt"] == (
        workload.spec["restarted_at"]
    )


@pytest.mark.django_db
def test_a_slurm_cluster_scales_its_workers(fleet, tenant, tenant_member):
    workload = launch(tenant, tenant_member, "slurm", name="train")
    services.workload_reconcile(workload_id=workload.pk)
    fleet.advance(20)
    observe(workload)
    assert observe(workload) == S.READY

    services.workload_scale(workload_id=workload.pk, actor=tenant_member, changes={"workers": 3})
    services.workload_reconcile(workload_id=workload.pk)
    assert status_of(workload) == S.PROVISIONING
    assert workload.status_message == "1 of 3 workers ready."
    fleet.advance(20)
    assert observe(workload) == S.READY
    assert workload.details["workers_ready"] == 3

    services.workload_scale(workload_id=workload.pk, actor=tenant_member, changes={"workers": 2})
    services.workload_reconcile(workload_id=workload.pk)
    assert status_of(workload) == S.READY
    assert SimulatedObject.objects.filter(kind="Pod", name__startswith="train-workers").count() == 2


@pytest.mark.django_db
@pytest.mark.parametrize("kind", list(SPECS))
def test_deleting_a_workload_finishes_with_nothing_of_it_left(
    kind, fleet, tenant, tenant_member, django_capture_on_commit_callbacks
):
    workload = launch(tenant, tenant_member, kind)
    services.workload_reconcile(workload_id=workload.pk)
    fleet.advance(20)
    observe(workload)
    observe(workload)
    assert SimulatedObject.objects.filter(kind__in=("Pod", "VirtualMachineInstance", "Secret",
                                                   "StatefulSet")).exists() or kind == "inference"

    services.workload_delete(workload_id=workload.pk, actor=tenant_member)
    with django_capture_on_commit_callbacks(execute=True):  # its tenant's queues follow
        services.workload_reconcile(workload_id=workload.pk)
    if status_of(workload) == S.DELETING:
        # Some objects went only after the first look (a Slurm cluster's key Secrets): the
        # detail page's polling looks again and finishes it.
        assert "to be gone" in workload.status_message
        Workload.objects.filter(pk=workload.pk).update(observation_recorded_at=None)  # a poll later
        with django_capture_on_commit_callbacks(execute=True):
            assert services.workload_refresh(workload=workload)

    assert status_of(workload) == S.DELETED
    # What is left is the tenant's (applied for an endpoint's queue), none of the workload's.
    tenants_own = {(m["kind"], m["metadata"]["name"])
                   for m in tenant_manifests(tenant_spec(tenant=tenant))}
    left = set(SimulatedObject.objects.filter(namespace=tenant.namespace)
               .values_list("kind", "name"))
    assert left <= tenants_own


@pytest.mark.django_db
def test_an_endpoint_whose_model_does_not_exist_fails_in_kserves_words(
    fleet, tenant, tenant_member
):
    spec = {**INFERENCE_SPEC, "model_uri": "hf://meta-llama/Llama-9-does-not-exist"}
    workload = launch(tenant, tenant_member, "inference", name="typo", spec=spec)
    services.workload_reconcile(workload_id=workload.pk)
    assert status_of(workload) == S.PROVISIONING
    fleet.advance(20)

    assert observe(workload) == S.FAILED
    assert workload.status_reason == "ModelLoadFailed"
    assert "Repository Not Found" in workload.status_message
    assert "meta-llama/Llama-9-does-not-exist" in workload.status_message
    note = OutboxEmail.objects.get(topic="workload.failed")
    assert "ModelLoadFailed" in note.body


# --- the demo data ----------------------------------------------------------------------------


# That a second load changes nothing (the workloads, their images, mails and cluster objects
# included) is tests/portal/test_demo.py's: the demo is loaded twice there, once here.
@pytest.mark.django_db
def test_the_demo_has_workloads_in_every_state():
    call_command("load_demo", stdout=StringIO())
    workloads = {w.name: w for w in Workload.objects.select_related("tenant")}
    state = {name: (w.tenant.slug, w.kind, w.status) for name, w in workloads.items()}
    # Spread over both clusters, each workload's objects on its own cluster, in its tenant's
    # namespace there.
    live = [w for w in workloads.values() if w.status != S.DELETED]
    assert {w.cluster_id for w in live} == {"main", "fra1"}
    assert workloads["eval-34b"].cluster_id == "fra1"  # where Helix's reserved nodes are
    for w in live:
        assert SimulatedObject.objects.filter(cluster=w.cluster_id, kind="Namespace",
                                              name=w.tenant.namespace).exists(), w.name
    for name in ("eval-34b", "support-chat"):
        assert {row.cluster for row in SimulatedObject.objects.filter(
            kind="InferenceService", name=name)} == {workloads[name].cluster_id}
    assert state["dev-cluster"] == ("nova", "vcluster", S.READY)
    assert state["support-assistant"] == ("nova", "inference", S.READY)
    assert state["search-embeddings"] == ("nova", "inference", S.PROVISIONING)
    # The HAMi share, admitted by Kueue through Nova's shares queue into the L40S HAMi flavor.
    assert state["support-chat"] == ("nova", "inference", S.READY)
    kueue = SimulatedObject.objects.filter(kind="Workload", namespace="tenant-nova")
    shares = [w.body for w in kueue if w.body["spec"]["queueName"] == "shares"]
    assert shares and {w["status"]["admission"]["podSetAssignments"][0]["flavors"][
        "nvidia.com/gpumem"] for w in shares} == {"hami-nvidia-l40s"}
    assert state["llama-70b-trial"] == ("nova", "inference", S.FAILED)
    # A gated model, loaded with the token nova stores (its Secret is on the fleet).
    assert state["llama-3b-gated"] == ("nova", "inference", S.READY)
    assert workloads["llama-3b-gated"].spec["credential"] == "hf-token"
    assert SimulatedObject.objects.filter(kind="Secret", namespace="tenant-nova",
                                          name="model-cred-hf-token").exists()
    assert state["eval-slurm"] == ("atlas", "slurm", S.READY)
    assert state["redteam-box"] == ("atlas", "vm", S.READY)
    assert state["notebook"] == ("orbit", "vm", S.READY)
    assert state["pretrain-cluster"] == ("helix", "vcluster", S.READY)
    assert workloads["redteam-box"].details["printable_status"] == "Stopped"
    assert workloads["notebook"].details["printable_status"] == "Running"
    assert workloads["eval-slurm"].details["workers_ready"] == 4
    failed = workloads["llama-70b-trial"]
    assert failed.status_reason == "ModelLoadFailed"
    assert "Repository Not Found" in failed.status_message
    assert {w.launched_by.username for w in workloads.values() if w.tenant.slug == "nova"} == {
        "mike"
    }
    assert set(VmImage.objects.values_list("key", flat=True)) == {"ubuntu-2404-nvidia", "rocky-9"}
    assert AuditEvent.objects.filter(action="vm_image.create").count() == 2


@pytest.mark.django_db
def test_the_demos_endpoint_coming_up_still_is_when_first_opened_however_long_loading_took(
    settings, login
):
    # Loading takes far longer than the fleet's controllers here: everything else is ready.
    settings.FLEET_SIMULATED_READY_SECONDS = 0.01
    call_command("load_demo", stdout=StringIO())
    fresh = Workload.objects.select_related("tenant").get(name="search-embeddings")
    mike = fresh.launched_by

    # Someone opens it for the first time: it looks again, and it is still coming up.
    page = login(mike).get(f"/t/{fresh.tenant.slug}/workloads/{fresh.pk}/")
    assert page.status_code == 200
    assert observe(fresh) == S.PROVISIONING
    assert Workload.objects.get(name="support-assistant").status == S.READY

    # Once its time has passed (it comes up on its own), it is ready.
    SimulatedObject.objects.filter(namespace=fresh.tenant.namespace).update(
        created_at=timezone.now() - timedelta(hours=1),
        updated_at=timezone.now() - timedelta(hours=1),
    )
    assert observe(fresh) == S.READY
