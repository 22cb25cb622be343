"""VMs and Slurm clusters through the machinery, against the Kubernetes API emulator (the tests
play KubeVirt and the Slinky operator): power actions and what they hold, restarts, key Secrets
made once, workers scaled within quota."""

import pytest
from django.core.exceptions import ValidationError

from core.errors import RuleViolation
from tenants.workloads import services
from tenants.workloads.models import WorkloadStatus
from tenants.workloads.selectors import tenant_demand_in_use

from .conftest import H100, SLURM_SPEC, VM_SPEC, run_slurm, run_vm, ssh_public_key

VM = ("kubevirt.io/v1", "VirtualMachine")
VMI = ("kubevirt.io/v1", "VirtualMachineInstance")
SLINKY = "slinky.slurm.net/v1beta1"


@pytest.fixture
def vm(tenant, tenant_member, gpu_pool, workload_quota, kube_gateway, kube_emulator):
    workload_quota()
    workload = services.workload_launch(
        tenant=tenant, actor=tenant_member, kind="vm", name="box",
        spec={**VM_SPEC, "ssh_public_key": ssh_public_key()},
    )
    services.workload_reconcile(workload_id=workload.pk)
    run_vm(kube_emulator, name="box", namespace=tenant.namespace)
    assert services.workload_observe(workload_id=workload.pk) == "ready"
    workload.refresh_from_db()
    return workload


@pytest.mark.django_db
def test_a_running_vm_shows_its_address_and_the_ssh_command(vm, tenant, kube_emulator):
    stored = kube_emulator.get_object(*VM, "box", tenant.namespace)
    assert stored["spec"]["runStrategy"] == "Always" and "running" not in stored["spec"]
    gpus = stored["spec"]["template"]["spec"]["domain"]["devices"]["gpus"]
    assert len(gpus) == 1 and gpus[0]["deviceName"].startswith("nvidia.com/")
    assert "ssh ubuntu@10.244.3.17" in str(vm.connection)
    assert vm.demand[H100] == 1


@pytest.mark.django_db
def test_stopping_a_vm_keeps_its_disk_and_gives_its_gpus_back(vm, tenant, tenant_member,
                                                              kube_emulator):
    services.workload_power(workload_id=vm.pk, actor=tenant_member, action="stop")
    held = tenant_demand_in_use(tenant=tenant)
    assert H100 not in held and held["storage-gib"] == 40 and "cpu" not in held
    services.workload_reconcile(workload_id=vm.pk)
    assert kube_emulator.get_object(*VM, "box", tenant.namespace)["spec"]["runStrategy"] == "Halted"
    run_vm(kube_emulator, name="box", namespace=tenant.namespace, running=False)
    assert services.workload_observe(workload_id=vm.pk) == "ready"  # stopped: settled
    vm.refresh_from_db()
    assert vm.details["power"] == "stopped"
    with pytest.raises(RuleViolation):
        services.workload_power(workload_id=vm.pk, actor=tenant_member, action="stop")

    services.workload_power(workload_id=vm.pk, actor=tenant_member, action="start")
    assert tenant_demand_in_use(tenant=tenant)[H100] == 1


@pytest.mark.django_db
def test_starting_a_vm_needs_its_gpus_to_be_free_again(vm, tenant, tenant_member, kube_emulator):
    services.workload_power(workload_id=vm.pk, actor=tenant_member, action="stop")
    # Meanwhile an endpoint takes the rest of the H100 quota (4).
    services.workload_launch(tenant=tenant, actor=tenant_member, kind="inference", name="chat",
                             spec={"model_uri": "hf://org/model", "gpu": H100,
                                   "gpus_per_replica": 2, "min_replicas": 1, "max_replicas": 2})
    with pytest.raises(ValidationError) as refused:
        services.workload_power(workload_id=vm.pk, actor=tenant_member, action="start")
    assert "quota" in refused.value.message_dict


@pytest.mark.django_db
def test_a_restart_replaces_the_running_vmi(vm, tenant, tenant_member, kube_emulator):
    services.workload_power(workload_id=vm.pk, actor=tenant_member, action="restart")
    assert services.workload_reconcile(workload_id=vm.pk) == "progressing"
    assert kube_emulator.get_object(*VMI, "box", tenant.namespace) is None  # deleted: KubeVirt
    run_vm(kube_emulator, name="box", namespace=tenant.namespace)  # boots a new one
    assert services.workload_observe(workload_id=vm.pk) == "ready"


@pytest.mark.django_db
def test_an_invalid_ssh_key_or_image_is_a_field_error_and_nothing_is_sent(
    tenant, tenant_member, gpu_pool, workload_quota, kube_gateway, kube_emulator
):
    workload_quota()
    for spec, field in (
        ({**VM_SPEC, "ssh_public_key": "ssh-ed25519 AAAAnot-base64"}, "spec.ssh_public_key"),
        ({**VM_SPEC, "ssh_public_key": ssh_public_key(), "custom_image": "not a reference"},
         "spec.custom_image"),
        ({**VM_SPEC, "ssh_public_key": ssh_public_key(), "gpus": 9}, "spec.gpus"),
    ):
        with pytest.raises(ValidationError) as refused:
            services.workload_launch(tenant=tenant, actor=tenant_member, kind="vm", name="box",
                                     spec=spec)
        assert field in refused.value.message_dict, refused.value.message_dict
    assert kube_emulator.requests() == []


@pytest.fixture
def slurm(tenant, tenant_member, gpu_pool, workload_quota, kube_gateway, kube_emulator):
    workload_quota()
    workload = services.workload_launch(tenant=tenant, actor=tenant_member, kind="slurm",
                                        name="hpc", spec=SLURM_SPEC)
    services.workload_reconcile(workload_id=workload.pk)
    return workload


@pytest.mark.django_db
def test_a_slurm_cluster_gets_its_keys_once_and_becomes_ready(slurm, tenant, kube_emulator):
    secrets = kube_emulator.requests("POST")
    assert {r.data["metadata"]["name"] for r in secrets} == {"hpc-slurm-key", "hpc-jwt-key"}
    key = kube_emulator.get_object("v1", "Secret", "hpc-slurm-key", tenant.namespace)["data"]
    services.workload_reconcile(workload_id=slurm.pk)  # again: the keys are not made again
    assert kube_emulator.get_object("v1", "Secret", "hpc-slurm-key", tenant.namespace
                                    )["data"] == key
    controller = kube_emulator.get_object(SLINKY, "Controller", "hpc", tenant.namespace)
    assert controller["spec"]["slurmKeyRef"]["name"] == "hpc-slurm-key"
    labels = {"portal.ai-factory.io/workload-id": str(slurm.pk),
              "app.kubernetes.io/managed-by": "ai-factory-portal"}
    run_slurm(kube_emulator, ctx_name="hpc", namespace=tenant.namespace, workers=2, labels=labels)
    assert services.workload_observe(workload_id=slurm.pk) == "ready"
    slurm.refresh_from_db()
    assert "sbatch" in str(slurm.connection)
    # The keys never reach a page or the spec.
    assert key["slurm.key"] not in str(slurm.observed)
    assert key["slurm.key"] not in str(slurm.spec)
    assert not {"slurm_key", "jwt_key"} & set(slurm.spec)


@pytest.mark.django_db
def test_slurm_workers_scale_within_quota_and_never_below_zero(slurm, tenant, tenant_member,
                                                               kube_emulator):
    with pytest.raises(ValidationError) as below:
        services.workload_scale(workload_id=slurm.pk, actor=tenant_member,
                                changes={"workers": -1})
    assert "spec.workers" in below.value.message_dict
    with pytest.raises(ValidationError) as beyond:
        services.workload_scale(workload_id=slurm.pk, actor=tenant_member,
                                changes={"workers": 5})  # 5 H100s, the quota is 4
    assert "quota" in beyond.value.message_dict

    services.workload_scale(workload_id=slurm.pk, actor=tenant_member, changes={"workers": 4})
    services.workload_reconcile(workload_id=slurm.pk)
    nodeset = kube_emulator.get_object(SLINKY, "NodeSet", "hpc-workers", tenant.namespace)
    assert nodeset["spec"]["replicas"] == 4
    assert tenant_demand_in_use(tenant=tenant)[H100] == 4
    services.workload_scale(workload_id=slurm.pk, actor=tenant_member, changes={"workers": 0})
    assert tenant_demand_in_use(tenant=tenant).get(H100, 0) == 0
    slurm.refresh_from_db()
    assert slurm.status != WorkloadStatus.FAILED


@pytest.mark.django_db
@pytest.mark.parametrize("action", ["explode", "", "START"])
def test_the_power_page_answers_an_unknown_action_with_400_as_the_api_does(
    vm, tenant, tenant_member, login, api_client, action
):
    page = login(tenant_member).post(
        f"/t/{tenant.slug}/workloads/{vm.pk}/power/", {"action": action, "confirm": vm.name}
    )
    api_client.force_login(tenant_member)
    api = api_client.post(f"/api/v1/workloads/{vm.pk}/power/", {"action": action}, format="json")

    assert page.status_code == api.status_code == 400
    assert "is not a power action" in page.content.decode()
    vm.refresh_from_db()
    assert vm.spec.get("running", True) is True
