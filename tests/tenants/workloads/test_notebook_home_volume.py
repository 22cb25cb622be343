"""The machinery and a notebook's home volume, against the Kubernetes API emulator: the PVC is
applied with the notebook but carries no workload-id label, so it is never pruned, never deleted
with the notebook, and shared by the person's notebooks in the tenant."""

import pytest

from tenants.workloads import services
from tenants.workloads.kinds import notebook
from tenants.workloads.kinds.base import LABEL_WORKLOAD_ID, LaunchContext
from tenants.workloads.models import Workload, WorkloadStatus

PVC = ("v1", "PersistentVolumeClaim")
STS = ("apps/v1", "StatefulSet")
IMAGES = {"pytorch": {"label": "PyTorch", "interface": "jupyterlab",
                      "image": "quay.io/jupyter/pytorch-notebook:cuda12-2025-11-10"}}


def _notebook(tenant, name: str, person: str = "alice") -> Workload:
    """A notebook as launched by `person` (its spec as validate makes it at launch)."""
    ctx = LaunchContext(isolation="shared", quota={}, person=person,
                        catalog={"notebook_images": IMAGES, "notebook_home_gib": 20})
    spec = notebook.KIND.validate({"image": "pytorch", "cpu": 2, "memory_gib": 4}, ctx)
    return Workload.objects.create(tenant=tenant, kind="notebook", name=name, spec=spec,
                                   demand=notebook.KIND.demand(spec))


@pytest.mark.django_db
def test_the_home_volume_is_applied_never_pruned_and_outlives_its_notebooks(
    tenant, tenant_member, kube_gateway, kube_emulator
):
    first, second = _notebook(tenant, "lab"), _notebook(tenant, "scratch")
    services.workload_reconcile(workload_id=first.pk)
    services.workload_reconcile(workload_id=second.pk)

    home = kube_emulator.get_object(*PVC, "home-alice", tenant.namespace)
    assert home is not None
    assert LABEL_WORKLOAD_ID not in home["metadata"]["labels"]
    assert home["spec"]["resources"]["requests"]["storage"] == "20Gi"
    for name in ("nb-lab", "nb-scratch"):
        assert kube_emulator.get_object(*STS, name, tenant.namespace) is not None

    # Stopped: the pod goes, the home stays; a later apply prunes nothing of it.
    first.refresh_from_db()
    Workload.objects.filter(pk=first.pk).update(
        spec=notebook.power(first.spec, "stop"), desired_version=first.desired_version + 1)
    services.workload_reconcile(workload_id=first.pk)
    assert kube_emulator.get_object(*STS, "nb-lab", tenant.namespace)["spec"]["replicas"] == 0
    assert kube_emulator.get_object(*PVC, "home-alice", tenant.namespace) is not None

    # Deleted: its objects go, the person's home stays for their other notebook and later ones.
    services.workload_delete(workload_id=first.pk, actor=tenant_member)
    services.workload_reconcile(workload_id=first.pk)
    first.refresh_from_db()
    assert first.status == WorkloadStatus.DELETED
    assert kube_emulator.get_object(*STS, "nb-lab", tenant.namespace) is None
    assert kube_emulator.get_object(*PVC, "home-alice", tenant.namespace) is not None

    services.workload_delete(workload_id=second.pk, actor=tenant_member)
    services.workload_reconcile(workload_id=second.pk)
    assert kube_emulator.get_object(*PVC, "home-alice", tenant.namespace) is not None
