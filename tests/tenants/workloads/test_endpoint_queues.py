"""An inference endpoint's queue of its own, through the real gateway against the Kubernetes API
emulator: applied (before its InferenceService names it) when it is launched, resized when its
minimum changes, pruned once it is deleted; what its queue holds counts in its tenant's quota."""

import pytest

from tenants.enforcement.manifests import KUEUE
from tenants.enforcement.services import tenant_reconcile, tenant_spec
from tenants.models import Quota, Tenant
from tenants.workloads import services
from tenants.workloads.models import Workload, WorkloadStatus

from ..kube_schemas import schema_errors
from .conftest import H100, INFERENCE_SPEC

ISVC = ("serving.kserve.io/v1beta1", "InferenceService")
GPU = ("gpu-nvidia-h100-80gb", "nvidia.com/gpu")


def _gpu_nominal(queue) -> str:
    cells = {
        (f["name"], c["name"]): c
        for g in queue["spec"]["resourceGroups"]
        for f in g["flavors"]
        for c in f["resources"]
    }
    return cells[GPU]["nominalQuota"]


@pytest.mark.django_db
def test_an_endpoints_queue_is_applied_before_it_resized_with_it_and_pruned_after_it(
    tenant,
    tenant_member,
    gpu_pool,
    workload_quota,
    kube_gateway,
    kube_emulator,
    django_capture_on_commit_callbacks,
):
    workload_quota()
    Tenant.objects.filter(pk=tenant.pk).update(cohort="shared-gpus")
    tenant_reconcile(tenant_id=tenant.pk)
    assert (
        kube_emulator.get_object(KUEUE, "ClusterQueue", "tenant-acme")["spec"]["cohortName"]
        == "shared-gpus"
    )

    endpoint = services.workload_launch(
        tenant=tenant,
        actor=tenant_member,
        kind="inference",
        name="chat",
        spec={**INFERENCE_SPEC, "min_replicas": 2, "max_replicas": 3},
    )
    services.workload_reconcile(workload_id=endpoint.pk)  # the endpoint's own reconcile

    queue = kube_emulator.get_object(KUEUE, "ClusterQueue", "tenant-acme-ep-chat")
    assert schema_errors(queue) == []
    assert (queue["spec"]["cohortName"], _gpu_nominal(queue)) == ("tenant-acme-cohort", "2")
    own = kube_emulator.get_object(KUEUE, "ClusterQueue", "tenant-acme")
    assert (own["spec"]["cohortName"], _gpu_nominal(own)) == ("tenant-acme-cohort", "2")
    cohort = kube_emulator.get_object(KUEUE, "Cohort", "tenant-acme-cohort")
    assert cohort["spec"]["parentName"] == "shared-gpus"
    local = kube_emulator.get_object(KUEUE, "LocalQueue", "ep-chat", tenant.namespace)
    assert local["spec"]["clusterQueue"] == "tenant-acme-ep-chat"
    isvc = kube_emulator.get_object(*ISVC, "chat", tenant.namespace)
    assert isvc["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "ep-chat"
    writes = [r.path for r in kube_emulator.requests() if r.method in ("PATCH", "POST")]
    first = {
        kind: next(i for i, p in enumerate(writes) if p.endswith(suffix))
        for kind, suffix in (("queue", "/localqueues/ep-chat"), ("isvc", "/inferenceservices/chat"))
    }
    assert first["queue"] < first["isvc"], "the queue exists before the endpoint names it"

    # Scaling its minimum resizes its queue: the scale queues the tenant's reconcile.
    with django_capture_on_commit_callbacks(execute=True):
        services.workload_scale(
            workload_id=endpoint.pk, actor=tenant_member, changes={"min_replicas": 1}
        )
    assert (
        _gpu_nominal(kube_emulator.get_object(KUEUE, "ClusterQueue", "tenant-acme-ep-chat")) == "1"
    )
    assert _gpu_nominal(kube_emulator.get_object(KUEUE, "ClusterQueue", "tenant-acme")) == "3"

    # Kueue reports each queue's use: the tenant's quota line sums them.
    for name, total in (("tenant-acme", "3"), ("tenant-acme-ep-chat", "2")):
        live = kube_emulator.get_object(KUEUE, "ClusterQueue", name)
        kube_emulator.put_object(
            {
                **live,
                "status": {
                    "flavorsUsage": [
                        {
                            "name": GPU[0],
                            "resources": [
                                {
                                    "name": GPU[1],
                                    "total": total,
                                    "borrowed": "1" if name.endswith("chat") else "0",
                                }
                            ],
                        }
                    ]
                },
            }
        )
    tenant_reconcile(tenant_id=tenant.pk)
    quota = Quota.objects.get(tenant=tenant, resource=H100)
    assert (quota.in_use, quota.borrowed) == (5, 1)  # 5 of its 4: one borrowed from the cohort

    # Deleted: once its objects are gone, its queues go too; the tenant's quota is whole again.
    with django_capture_on_commit_callbacks(execute=True):
        services.workload_delete(workload_id=endpoint.pk, actor=tenant_member)
    with django_capture_on_commit_callbacks(execute=True):
        services.workload_reconcile(workload_id=endpoint.pk)
    assert Workload.objects.get(pk=endpoint.pk).status == WorkloadStatus.DELETED
    assert kube_emulator.get_object(KUEUE, "ClusterQueue", "tenant-acme-ep-chat") is None
    assert kube_emulator.get_object(KUEUE, "LocalQueue", "ep-chat", tenant.namespace) is None
    own = kube_emulator.get_object(KUEUE, "ClusterQueue", "tenant-acme")
    assert (own["spec"]["cohortName"], _gpu_nominal(own)) == ("shared-gpus", "4")


@pytest.mark.django_db
def test_the_tenants_endpoints_are_read_in_one_query_however_many(
    tenant, django_assert_num_queries
):
    for n in range(3):
        Workload.objects.create(
            tenant=tenant,
            kind="inference",
            name=f"chat-{n}",
            spec={**INFERENCE_SPEC, "min_replicas": n, "cpu": 4, "memory_gib": 16},
        )
    Workload.objects.create(
        tenant=tenant,
        kind="inference",
        name="gone",
        status="deleted",
        spec={**INFERENCE_SPEC, "cpu": 4, "memory_gib": 16},
    )
    with django_assert_num_queries(2):  # its quota, and its endpoints
        spec = tenant_spec(tenant=tenant)
    assert [q.name for q in spec.endpoint_queues] == ["chat-1", "chat-2"]  # min 0: none
