"""The workload machinery against the Kubernetes API emulator over HTTP: launch and admission,
reconcile and observation, scale, deletion, faults, sweeps, concurrency; the tests play the
controllers."""

import threading

import pytest
from django.core.exceptions import ValidationError
from django.db import connection

from core.errors import InvalidTransition, RuleViolation
from core.fleet import PermanentFleetError, TransientFleetError
from core.models import AuditEvent, OutboxEmail
from tenants.enforcement.services import tenant_reconcile
from tenants.workloads import services
from tenants.workloads.models import Workload, WorkloadEvent, WorkloadStatus
from tenants.workloads.selectors import tenant_demand_in_use

from .conftest import (
    H100,
    INFERENCE_SPEC,
    VCLUSTER_SPEC,
    ready_helm_release,
    ready_inference_service,
)

ISVC = ("serving.kserve.io/v1beta1", "InferenceService")
WRITES = ("PATCH", "POST", "PUT", "DELETE")


def _launch(tenant, who, *, kind="inference", name="chat", spec=None):
    return services.workload_launch(
        tenant=tenant, actor=who, kind=kind, name=name, spec=spec or INFERENCE_SPEC
    )


def _writes(kube_emulator):
    return [r for r in kube_emulator.requests() if r.method in WRITES]


@pytest.fixture
def ready(tenant, tenant_member, gpu_pool, workload_quota, kube_gateway, kube_emulator):
    """An inference endpoint, launched, applied and ready."""
    workload_quota()
    workload = _launch(tenant, tenant_member)
    services.workload_reconcile(workload_id=workload.pk)
    ready_inference_service(kube_emulator, name="chat", namespace=tenant.namespace)
    services.workload_observe(workload_id=workload.pk)
    workload.refresh_from_db()
    assert workload.status == WorkloadStatus.READY
    return workload


@pytest.mark.django_db
def test_an_inference_endpoint_goes_from_pending_to_ready_and_its_launcher_is_told(
    tenant, tenant_member, gpu_pool, workload_quota, kube_gateway, kube_emulator,
    django_capture_on_commit_callbacks,
):
    workload_quota()
    with django_capture_on_commit_callbacks(execute=False) as queued:
        workload = _launch(tenant, tenant_member)
    assert workload.status == WorkloadStatus.PENDING
    assert workload.demand == {H100: 2, "cpu": 8, "memory-gib": 64, "count:inference": 1}
    assert len(queued) == 2  # the reconcile, and its tenant's (its queue), after commit
    assert _writes(kube_emulator) == []  # nothing reaches the cluster inside the request

    assert services.workload_reconcile(workload_id=workload.pk) == "progressing"
    workload.refresh_from_db()
    assert workload.status == WorkloadStatus.PROVISIONING
    assert workload.in_sync
    stored = kube_emulator.get_object(*ISVC, "chat", tenant.namespace)
    assert stored["metadata"]["labels"]["portal.ai-factory.io/workload-id"] == str(workload.pk)
    assert stored["metadata"]["annotations"]["serving.kserve.io/deploymentMode"] == "Standard"
    # Its replicas queue in its own LocalQueue (it has a minimum), at the serving priority.
    assert stored["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "ep-chat"
    assert stored["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] == "portal-serving"

    ready_inference_service(kube_emulator, name="chat", namespace=tenant.namespace)
    assert services.workload_observe(workload_id=workload.pk) == "ready"
    workload.refresh_from_db()
    assert workload.status == WorkloadStatus.READY and workload.ready_at is not None
    assert "chat" in str(workload.connection) and "curl" in str(workload.connection)
    steps = list(workload.events.values_list("kind", "to_status"))
    assert steps[0] == ("launched", "pending")
    assert ("transition", "provisioning") in steps and ("transition", "ready") in steps
    assert AuditEvent.objects.filter(action="workload.launch", actor=tenant_member).exists()
    assert AuditEvent.objects.filter(action="workload.ready", object_id=str(workload.pk)).exists()
    (note,) = OutboxEmail.objects.filter(topic="workload.ready")
    assert note.to == [tenant_member.email]
    assert f"/t/{tenant.slug}/workloads/{workload.pk}/" in note.body


@pytest.mark.django_db
def test_a_vcluster_becomes_ready_and_its_kubeconfig_download_is_audited(
    tenant, tenant_member, tenant_viewer, gpu_pool, workload_quota, kube_gateway, kube_emulator
):
    workload_quota()
    workload = _launch(tenant, tenant_member, kind="vcluster", name="dev", spec=VCLUSTER_SPEC)
    services.workload_reconcile(workload_id=workload.pk)
    release = kube_emulator.get_object("helm.toolkit.fluxcd.io/v2", "HelmRelease", "dev",
                                       tenant.namespace)
    server = release["spec"]["values"]["exportKubeConfig"]["server"]
    assert server == f"https://dev.{tenant.namespace}.svc:443"
    assert services.workload_observe(workload_id=workload.pk) == "progressing"

    ready_helm_release(kube_emulator, name="dev", namespace=tenant.namespace, server=server)
    assert services.workload_observe(workload_id=workload.pk) == "ready"
    workload.refresh_from_db()

    kubeconfig = services.workload_kubeconfig(workload=workload, actor=tenant_member)
    assert f"server: {server}" in kubeconfig
    assert AuditEvent.objects.filter(action="workload.kubeconfig_download",
                                     actor=tenant_member).count() == 1
    with pytest.raises(Exception) as refused:
        services.workload_kubeconfig(workload=workload, actor=tenant_viewer)
    assert refused.type.__name__ == "PermissionDenied"


@pytest.mark.django_db
def test_a_launch_over_quota_is_refused_and_nothing_is_created(
    tenant, tenant_member, gpu_pool, workload_quota, kube_gateway, kube_emulator
):
    workload_quota(**{H100: 1})
    with pytest.raises(ValidationError) as refused:
        _launch(tenant, tenant_member)
    assert "needs 2" in " ".join(refused.value.message_dict["quota"])
    assert not Workload.objects.exists()
    assert kube_emulator.requests() == []


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("name", "spec", "field"),
    [
        ("Not_A_Label", INFERENCE_SPEC, "name"),
        ("x" * 64, INFERENCE_SPEC, "name"),
        ("chat", {**INFERENCE_SPEC, "gpus_per_replica": 0}, "spec.gpus_per_replica"),
        ("chat", {**INFERENCE_SPEC, "gpus_per_replica": -2}, "spec.gpus_per_replica"),
        ("chat", {**INFERENCE_SPEC, "gpus_per_replica": 9}, "spec.gpus_per_replica"),
        ("chat", {**INFERENCE_SPEC, "gpu": "gpu:nvidia-h200"}, "spec.gpu"),
        ("chat", {**INFERENCE_SPEC, "model_uri": "ftp://models/llama"}, "spec.model_uri"),
        ("chat", {**INFERENCE_SPEC, "min_replicas": 3, "max_replicas": 2}, "spec.min_replicas"),
        ("chat", {**INFERENCE_SPEC, "max_replicas": 10**30}, "spec.max_replicas"),
        ("chat", {**INFERENCE_SPEC, "cpu": "four"}, "spec.cpu"),
    ],
)
def test_bad_input_gets_field_errors_and_sends_nothing(
    tenant, tenant_member, gpu_pool, workload_quota, kube_gateway, kube_emulator, name, spec,
    field,
):
    workload_quota(**{"gpu:nvidia-h200": 0})
    with pytest.raises(ValidationError) as refused:
        _launch(tenant, tenant_member, name=name, spec=spec)
    errors = refused.value.message_dict
    assert any(key == field or key.startswith(field) for key in errors), errors
    assert not Workload.objects.exists()
    assert kube_emulator.requests() == []


@pytest.mark.django_db
def test_a_taken_name_is_refused_until_its_workload_is_deleted(ready, tenant, tenant_member,
                                                               kube_emulator):
    with pytest.raises(ValidationError) as refused:
        _launch(tenant, tenant_member, name="chat", spec={**INFERENCE_SPEC, "max_replicas": 1})
    assert "taken" in " ".join(refused.value.message_dict["name"])


@pytest.mark.django_db
def test_a_viewer_cannot_launch(tenant, tenant_viewer, gpu_pool, workload_quota, kube_gateway):
    workload_quota()
    with pytest.raises(Exception) as refused:
        _launch(tenant, tenant_viewer)
    assert refused.type.__name__ == "PermissionDenied"
    assert not Workload.objects.exists()


@pytest.mark.django_db
def test_scaling_up_is_admitted_against_quota_and_applied(ready, tenant_member, kube_emulator):
    with pytest.raises(ValidationError) as refused:
        services.workload_scale(workload_id=ready.pk, actor=tenant_member,
                                changes={"max_replicas": 5})
    assert "quota" in refused.value.message_dict
    ready.refresh_from_db()
    assert ready.spec["max_replicas"] == 2  # nothing changed

    services.workload_scale(workload_id=ready.pk, actor=tenant_member,
                            changes={"min_replicas": 0, "max_replicas": 4})
    ready.refresh_from_db()
    assert ready.demand[H100] == 4 and not ready.in_sync
    services.workload_reconcile(workload_id=ready.pk)
    stored = kube_emulator.get_object(*ISVC, "chat", ready.tenant.namespace)
    assert (stored["spec"]["predictor"]["minReplicas"], stored["spec"]["predictor"]["maxReplicas"]
            ) == (0, 4)
    ready.refresh_from_db()
    assert ready.in_sync
    assert ready.events.filter(kind=WorkloadEvent.Kind.SCALED, demand__contains={H100: 4}).exists()


@pytest.mark.django_db
def test_deletion_finishes_only_when_every_object_is_gone_and_releases_the_quota(
    ready, tenant, tenant_member, kube_emulator
):
    # A finalizer holds the object: the API server keeps it until its controller lets go.
    kube_emulator.fail(409, method="DELETE", path=f"/apis/serving.kserve.io/v1beta1/namespaces/"
                       f"{tenant.namespace}/inferenceservices/chat", times=2)
    services.workload_delete(workload_id=ready.pk, actor=tenant_member)
    ready.refresh_from_db()
    assert ready.status == WorkloadStatus.DELETING
    assert tenant_demand_in_use(tenant=tenant)[H100] == 2  # held until confirmed gone

    for _ in range(2):  # a conflict is worth a retry, until the finalizer lets go
        with pytest.raises(TransientFleetError):
            services.workload_reconcile(workload_id=ready.pk)
        ready.refresh_from_db()
        assert ready.status == WorkloadStatus.DELETING

    services.workload_reconcile(workload_id=ready.pk)
    ready.refresh_from_db()
    assert ready.status == WorkloadStatus.DELETED and ready.deleted_at is not None
    assert kube_emulator.get_object(*ISVC, "chat", tenant.namespace) is None
    assert tenant_demand_in_use(tenant=tenant) == {}
    # The name is free again.
    assert _launch(tenant, tenant_member, name="chat").status == WorkloadStatus.PENDING


@pytest.mark.django_db
def test_a_deleting_workload_cannot_be_deleted_or_scaled_again(ready, tenant_member):
    services.workload_delete(workload_id=ready.pk, actor=tenant_member)
    with pytest.raises(InvalidTransition):
        services.workload_delete(workload_id=ready.pk, actor=tenant_member)
    with pytest.raises(RuleViolation):
        services.workload_scale(workload_id=ready.pk, actor=tenant_member,
                                changes={"max_replicas": 1})


@pytest.mark.django_db
@pytest.mark.parametrize("status", [500, 503, 429])
def test_a_transient_cluster_error_is_recorded_and_the_next_try_succeeds(
    tenant, tenant_member, gpu_pool, workload_quota, kube_gateway, kube_emulator, status
):
    workload_quota()
    workload = _launch(tenant, tenant_member)
    path = f"/apis/serving.kserve.io/v1beta1/namespaces/{tenant.namespace}/inferenceservices/chat"
    kube_emulator.fail(status, method="PATCH", path=path, message="etcd leader changed")
    with pytest.raises(TransientFleetError):
        services.workload_reconcile(workload_id=workload.pk)
    workload.refresh_from_db()
    assert "etcd leader changed" in workload.reconcile_error
    assert workload.status == WorkloadStatus.PENDING
    assert workload.events.filter(kind=WorkloadEvent.Kind.ERROR).count() == 1

    assert services.workload_reconcile(workload_id=workload.pk) == "progressing"
    workload.refresh_from_db()
    assert workload.reconcile_error == "" and workload.status == WorkloadStatus.PROVISIONING
    # One create per try, nothing twice: the failed try's object was not stored.
    assert len(kube_emulator.requests("PATCH", path)) == 2


@pytest.mark.django_db
def test_a_timeout_is_transient(tenant, tenant_member, gpu_pool, workload_quota, kube_gateway,
                                kube_emulator):
    workload_quota()
    workload = _launch(tenant, tenant_member)
    path = f"/apis/serving.kserve.io/v1beta1/namespaces/{tenant.namespace}/inferenceservices/chat"
    kube_emulator.delay(3, method="PATCH", path=path)  # the gateway's timeout is 2 s
    with pytest.raises(TransientFleetError):
        services.workload_reconcile(workload_id=workload.pk)
    assert services.workload_reconcile(workload_id=workload.pk) == "progressing"


@pytest.mark.django_db
def test_a_permanent_refusal_fails_the_workload_with_the_apis_message(
    tenant, tenant_member, gpu_pool, workload_quota, kube_gateway, kube_emulator
):
    workload_quota()
    workload = _launch(tenant, tenant_member)
    path = f"/apis/serving.kserve.io/v1beta1/namespaces/{tenant.namespace}/inferenceservices/chat"
    kube_emulator.fail(422, method="PATCH", path=path,
                       message='admission webhook "vinferenceservice" denied the request')
    with pytest.raises(PermanentFleetError):
        services.workload_reconcile(workload_id=workload.pk)
    workload.refresh_from_db()
    assert workload.status == WorkloadStatus.FAILED
    assert "denied the request" in workload.status_message
    assert OutboxEmail.objects.filter(topic="workload.failed").count() == 1


@pytest.mark.django_db
def test_a_model_that_fails_to_load_fails_with_the_clusters_reason(
    tenant, tenant_member, gpu_pool, workload_quota, kube_gateway, kube_emulator
):
    workload_quota()
    workload = _launch(tenant, tenant_member)
    services.workload_reconcile(workload_id=workload.pk)
    kube_emulator.patch_object(*ISVC, "chat", tenant.namespace, patch={"status": {
        "conditions": [
            {"type": "PredictorReady", "status": "False", "reason": "ModelLoadFailed",
             "message": "Repository Not Found for url: https://huggingface.co/meta-llama/nope"},
            {"type": "Ready", "status": "False", "reason": "ModelLoadFailed",
             "message": "Repository Not Found for url: https://huggingface.co/meta-llama/nope"},
        ],
        "modelStatus": {"states": {"activeModelState": "", "targetModelState": "FailedToLoad"},
                        "transitionStatus": "BlockedByFailedLoad",
                        "lastFailureInfo": {"reason": "ModelLoadFailed",
                                            "message": "Repository Not Found"}},
    }})
    assert services.workload_observe(workload_id=workload.pk) == "failed"
    workload.refresh_from_db()
    assert workload.status == WorkloadStatus.FAILED
    assert "Repository Not Found" in workload.status_message


@pytest.mark.django_db
def test_an_object_deleted_by_hand_is_applied_again(ready, tenant, kube_emulator,
                                                    django_capture_on_commit_callbacks):
    kube_gateway = None  # the fixture's gateway is installed; the emulator is the cluster
    kube_emulator.patch_object(*ISVC, "chat", tenant.namespace, patch={"metadata": {}})
    from core.fleet import get_gateway

    get_gateway("main").delete(api_version=ISVC[0], kind=ISVC[1], name="chat",
                         namespace=tenant.namespace)
    with django_capture_on_commit_callbacks(execute=True):
        services.workload_observe(workload_id=ready.pk)
    assert kube_emulator.get_object(*ISVC, "chat", tenant.namespace) is not None
    assert ready.events.filter(reason="Missing").exists()
    del kube_gateway


@pytest.mark.django_db
def test_kubernetes_requests_per_workload_stay_bounded(
    tenant, tenant_member, gpu_pool, workload_quota, kube_gateway, kube_emulator
):
    workload_quota()
    workload = _launch(tenant, tenant_member)
    tenant_reconcile(tenant_id=workload.tenant_id)  # its queue: the tenant's objects, not its own
    seen = len(kube_emulator.requests())
    services.workload_reconcile(workload_id=workload.pk)
    ready_inference_service(kube_emulator, name="chat", namespace=tenant.namespace)
    services.workload_observe(workload_id=workload.pk)
    services.workload_reconcile(workload_id=workload.pk)  # late, twice: changes nothing
    api = [r for r in kube_emulator.requests()[seen:]
           if not r.path.startswith(("/version", "/api/v1", "/apis", "/openapi"))
           or "/namespaces/" in r.path]
    writes = [r for r in api if r.method in WRITES]
    assert len(writes) == 1  # one server-side apply of its one object, never repeated
    # The apply (its first look is judged from the apply's answer), one list per owned kind
    # (the InferenceService, its predictor's pods, its API keys' Secrets) per later look.
    assert len(api) <= 1 + 2 * 3


@pytest.mark.django_db
def test_a_first_apply_is_judged_from_the_applys_answers_without_reading_the_cluster(
    tenant, tenant_member, gpu_pool, workload_quota, kube_gateway, kube_emulator
):
    workload_quota()
    workload = _launch(tenant, tenant_member, kind="vcluster", name="dev", spec=VCLUSTER_SPEC)
    assert services.workload_reconcile(workload_id=workload.pk) == "progressing"
    namespaced = [r for r in kube_emulator.requests() if "/namespaces/" in r.path]
    # A HelmRepository and a HelmRelease applied; no list of its kinds, no get of the chart's
    # Secret and StatefulSet: nothing made from them can exist before them.
    assert [r.method for r in namespaced] == ["PATCH", "PATCH"]
    workload.refresh_from_db()
    assert workload.status == WorkloadStatus.PROVISIONING
    assert workload.observed["state"] == "progressing"

    # Later looks read the cluster, and a second apply (a change) is looked at in full.
    services.workload_scale(workload_id=workload.pk, actor=tenant_member, changes={"cpu": 4})
    services.workload_reconcile(workload_id=workload.pk)
    reads = [r for r in kube_emulator.requests("GET") if "/namespaces/" in r.path]
    assert len(reads) == 3 + 2  # one list per owned kind (TLSRoute too), a get per chart object


@pytest.mark.django_db
def test_the_sweep_reads_the_charts_objects_of_every_vcluster_in_one_list_per_kind(
    tenant, tenant_member, gpu_pool, workload_quota, kube_gateway, kube_emulator
):
    workload_quota()
    names = ("dev", "test")
    for name in names:
        workload = _launch(tenant, tenant_member, kind="vcluster", name=name,
                           spec=VCLUSTER_SPEC)
        services.workload_reconcile(workload_id=workload.pk)
        release = kube_emulator.get_object("helm.toolkit.fluxcd.io/v2", "HelmRelease", name,
                                           tenant.namespace)
        ready_helm_release(kube_emulator, name=name, namespace=tenant.namespace,
                           server=release["spec"]["values"]["exportKubeConfig"]["server"])
    before = len(kube_emulator.requests("GET"))
    assert services.workloads_observe_sweep() == 2
    reads = [r.path.rsplit("/", 1)[-1] for r in kube_emulator.requests("GET")[before:]
             if "/namespaces/" in r.path]  # not discovery
    # One list per owned kind (HelmRepository, HelmRelease, TLSRoute) and per chart object's
    # kind (Secret, StatefulSet) for both, not a get per vCluster.
    assert sorted(reads) == ["helmreleases", "helmrepositories", "secrets", "statefulsets",
                             "tlsroutes"]
    assert {w.status for w in Workload.objects.all()} == {WorkloadStatus.READY}


def test_a_sweep_over_many_workloads_selects_the_portals_objects_not_each_id():
    from tenants.workloads.services.cluster_reads import MAX_SELECTED_IDS, _selector

    few = _selector([3, 1, 2])
    assert few.endswith("portal.ai-factory.io/workload-id in (1,2,3)")
    many = _selector(range(1, MAX_SELECTED_IDS + 2))
    assert many == "app.kubernetes.io/managed-by=ai-factory-portal"  # sorted by label here


@pytest.mark.django_db
def test_the_sweeps_requeue_lost_work_and_observe_every_live_workload_in_one_list_per_kind(
    tenant, tenant_member, gpu_pool, workload_quota, kube_gateway, kube_emulator,
    django_capture_on_commit_callbacks,
):
    workload_quota(**{"count:inference": 3, H100: 6})
    first = _launch(tenant, tenant_member, name="one", spec={**INFERENCE_SPEC, "max_replicas": 1})
    second = _launch(tenant, tenant_member, name="two",
                     spec={**INFERENCE_SPEC, "max_replicas": 1})
    # Their reconciles were lost (the broker was down): the sweep finds them in the database.
    with django_capture_on_commit_callbacks(execute=True):
        queued = services.workloads_reconcile_sweep()
    assert set(queued) == {first.pk, second.pk}
    assert {w.status for w in Workload.objects.all()} == {WorkloadStatus.PROVISIONING}

    for name in ("one", "two"):
        ready_inference_service(kube_emulator, name=name, namespace=tenant.namespace)
    before = len(kube_emulator.requests("GET"))
    assert services.workloads_observe_sweep() == 2
    # One list per kind an endpoint owns (its InferenceService, its predictor's pods, its API
    # keys' Secrets), for both workloads (and the API's discovery, once, of the core kinds' group).
    lists = [r for r in kube_emulator.requests("GET")[before:] if "/namespaces/" in r.path]
    assert len(lists) == 3
    assert {w.status for w in Workload.objects.all()} == {WorkloadStatus.READY}


@pytest.mark.django_db(transaction=True)
def test_concurrent_launches_never_exceed_the_quota(
    tenant, tenant_member, gpu_pool, workload_quota, simulated_gateway
):
    assert connection.vendor == "postgresql"
    workload_quota(**{"count:inference": 1})
    start = threading.Barrier(2)
    outcomes: list[object] = []

    def launch(name: str) -> None:
        try:
            start.wait(timeout=10)
            outcomes.append(_launch(tenant, tenant_member, name=name,
                                    spec={**INFERENCE_SPEC, "max_replicas": 1}))
        except ValidationError as exc:
            outcomes.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=launch, args=(n,)) for n in ("left", "right")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)

    launched = [o for o in outcomes if isinstance(o, Workload)]
    refused = [o for o in outcomes if isinstance(o, ValidationError)]
    assert len(launched) == 1 and len(refused) == 1
    assert "quota" in refused[0].message_dict
    assert Workload.objects.count() == 1


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("limits", "tight"),
    [
        ({"hami:nvidia-l40s:memory-gib": 64, "hami:nvidia-l40s:cores": 200}, "GPU memory"),
        ({"hami:nvidia-l40s:memory-gib": 96, "hami:nvidia-l40s:cores": 100}, "GPU compute"),
    ],
    ids=["memory", "cores"],
)
def test_concurrent_scale_ups_never_exceed_the_quota(
    tenant, tenant_member, workload_quota, simulated_gateway, limits, tight
):
    """Two HAMi endpoints share one quota; each scale-up fits alone, both together do not —
    whichever of HAMi's two counters is the tight one."""
    from tests.factories import hami_gpu_node

    assert connection.vendor == "postgresql"
    hami_gpu_node()
    workload_quota(**limits)
    share = {"model_uri": "hf://Qwen/Qwen2.5-7B-Instruct", "gpu": "hami:nvidia-l40s",
             "gpu_memory_gib": 20, "gpu_cores": 30, "min_replicas": 1, "max_replicas": 1,
             "cpu": 2, "memory_gib": 16}
    workloads = [_launch(tenant, tenant_member, name=n, spec=share) for n in ("left", "right")]
    start = threading.Barrier(2)
    outcomes: list[object] = []

    def scale_up(workload_id: int) -> None:
        try:
            start.wait(timeout=10)
            outcomes.append(services.workload_scale(
                workload_id=workload_id, actor=tenant_member, changes={"max_replicas": 2}
            ))
        except ValidationError as exc:
            outcomes.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=scale_up, args=(w.pk,)) for w in workloads]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)

    scaled = [o for o in outcomes if isinstance(o, Workload)]
    refused = [o for o in outcomes if isinstance(o, ValidationError)]
    assert len(scaled) == 1 and len(refused) == 1
    assert tight in " ".join(refused[0].message_dict["quota"])
    held = tenant_demand_in_use(tenant=tenant)
    assert held["hami:nvidia-l40s:memory-gib"] == 60 and held["hami:nvidia-l40s:cores"] == 90
    assert sorted(Workload.objects.values_list("spec__max_replicas", flat=True)) == [1, 2]


@pytest.mark.django_db
def test_a_dedicated_tenant_is_offered_only_its_reserved_nodes_and_placed_on_them(
    tenant, tenant_member, workload_quota, kube_gateway, kube_emulator
):
    from tenants.workloads.selectors import launch_context
    from tests.factories import GPUFactory, NodeFactory

    tenant.isolation = "dedicated"
    tenant.save()
    shared = NodeFactory(reserved_for="")
    for index in range(8):
        GPUFactory(node=shared, index=index, model="nvidia-h100-80gb")
    reserved = NodeFactory(reserved_for=tenant.slug)
    for index in range(4):
        GPUFactory(node=reserved, index=index, model="nvidia-h100-80gb")
    workload_quota()

    offers = {o.resource: o.max_per_node for o in launch_context(tenant=tenant).gpu_offers}
    assert offers == {H100: 4}  # its reserved node, not the shared pool's larger one
    with pytest.raises(ValidationError) as refused:
        _launch(tenant, tenant_member, spec={**INFERENCE_SPEC, "gpus_per_replica": 8})
    assert "spec.gpus_per_replica" in refused.value.message_dict

    workload = _launch(tenant, tenant_member, spec={**INFERENCE_SPEC, "max_replicas": 1})
    services.workload_reconcile(workload_id=workload.pk)
    predictor = kube_emulator.get_object(*ISVC, "chat", tenant.namespace)["spec"]["predictor"]
    assert predictor["nodeSelector"]["portal.ai-factory.io/reserved-for"] == tenant.slug
    assert {"key": "portal.ai-factory.io/reserved-for", "operator": "Equal",
            "value": tenant.slug, "effect": "NoSchedule"} in predictor["tolerations"]


@pytest.mark.django_db
def test_an_endpoint_whose_replicas_kueue_holds_is_queued_on_its_pages_and_in_the_api(
    tenant, tenant_member, gpu_pool, workload_quota, kube_gateway, kube_emulator, login,
):
    workload_quota()
    workload = _launch(tenant, tenant_member)
    services.workload_reconcile(workload_id=workload.pk)
    stored = kube_emulator.get_object(*ISVC, "chat", tenant.namespace)
    # Play KServe and Kueue: the predictor's pod carries the endpoint's labels, and Kueue's
    # admission gate while the tenant's queue has no room for it.
    kube_emulator.put_object({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "chat-predictor-0", "namespace": tenant.namespace,
                     "labels": {**stored["metadata"]["labels"],
                                "serving.kserve.io/inferenceservice": "chat"}},
        "spec": {"containers": [{"name": "kserve-container", "image": "vllm"}],
                 "schedulingGates": [{"name": "kueue.x-k8s.io/admission"}]},
        "status": {"phase": "Pending"},
    })

    services.workload_observe(workload_id=workload.pk)
    workload.refresh_from_db()

    assert (workload.status, workload.status_reason) == (WorkloadStatus.PROVISIONING, "Queued")
    assert workload.details["replicas_queued"] == 1
    member = login(tenant_member)
    for path in (f"/t/{tenant.slug}/workloads/{workload.pk}/", f"/t/{tenant.slug}/workloads/",
                 f"/t/{tenant.slug}/"):
        page = member.get(path).content.decode()
        assert 'data-status="queued"' in page, path
    detail = member.get(f"/t/{tenant.slug}/workloads/{workload.pk}/").content.decode()
    assert "1 replica waiting in the tenant&#x27;s queue" in detail
    answer = member.get(f"/api/v1/workloads/{workload.pk}/").json()
    assert (answer["status"], answer["status_label"]) == ("provisioning", "Queued")
