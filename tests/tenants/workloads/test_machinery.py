"""The workload machinery end to end against the Kubernetes API emulator over HTTP: launch,
admission, reconcile, observe, scale, delete; the tests play the controllers."""

import pytest
from django.core.exceptions import ValidationError

from portal.models import AuditEvent, OutboxEmail
from tenants.workloads import services
from tenants.workloads.models import Workload, WorkloadStatus

from .conftest import H100, INFERENCE_SPEC, ready_inference_service

ISVC = ("serving.kserve.io/v1beta1", "InferenceService")


@pytest.mark.django_db
def test_an_inference_endpoint_goes_from_pending_to_ready(
    tenant, tenant_member, gpu_pool, workload_quota, kube_gateway, kube_emulator,
    django_capture_on_commit_callbacks,
):
    workload_quota()
    with django_capture_on_commit_callbacks(execute=False) as queued:
        workload = services.workload_launch(
            tenant=tenant, actor=tenant_member, kind="inference", name="chat",
            spec=INFERENCE_SPEC,
        )
    assert workload.status == WorkloadStatus.PENDING
    assert workload.demand == {H100: 2, "cpu": 8, "memory-gib": 64, "count:inference": 1}
    assert len(queued) == 1  # the reconcile, after commit

    assert services.workload_reconcile(workload_id=workload.pk) == "progressing"
    workload.refresh_from_db()
    assert workload.status == WorkloadStatus.PROVISIONING
    stored = kube_emulator.get_object(*ISVC, "chat", tenant.namespace)
    assert stored["metadata"]["labels"]["portal.ai-factory.io/workload-id"] == str(workload.pk)

    ready_inference_service(kube_emulator, name="chat", namespace=tenant.namespace)
    assert services.workload_observe(workload_id=workload.pk) == "ready"
    workload.refresh_from_db()
    assert workload.status == WorkloadStatus.READY
    assert workload.ready_at is not None
    assert "chat" in str(workload.connection)
    steps = list(workload.events.values_list("kind", "to_status"))
    assert steps[0] == ("launched", "pending")
    assert ("transition", "ready") in steps
    assert AuditEvent.objects.filter(action="workload.ready", object_id=str(workload.pk)).exists()
    note = OutboxEmail.objects.get(topic="workload.ready")
    assert note.to == [tenant_member.email]


@pytest.mark.django_db
def test_a_launch_over_quota_is_refused_with_nothing_created(
    tenant, tenant_member, gpu_pool, workload_quota, kube_gateway, kube_emulator
):
    workload_quota(**{H100: 1})
    with pytest.raises(ValidationError) as refused:
        services.workload_launch(tenant=tenant, actor=tenant_member, kind="inference",
                                 name="chat", spec=INFERENCE_SPEC)
    assert "quota" in refused.value.message_dict
    assert not Workload.objects.exists()
    assert kube_emulator.requests("PATCH") == []
