"""The demo's workloads: the simulated fleet drives every kind through the real services
(launch, reconcile, observe, delete)."""

import pytest

from portal.models import SimulatedObject
from tenants.workloads import services
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
    services.workload_reconcile(workload_id=workload.pk)
    if status_of(workload) == S.DELETING:
        # Some objects went only after the first look (a Slurm cluster's key Secrets): the
        # detail page's polling looks again and finishes it.
        assert "to be gone" in workload.status_message
        Workload.objects.filter(pk=workload.pk).update(observed_at=None)  # a poll later
        with django_capture_on_commit_callbacks(execute=True):
            assert services.workload_refresh(workload=workload)

    assert status_of(workload) == S.DELETED
    assert not SimulatedObject.objects.filter(namespace=tenant.namespace).exists()
