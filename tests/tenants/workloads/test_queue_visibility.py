"""Why a queued workload waits, and who preempted it, read from Kueue through the emulator.

The tests play KServe and Kueue: a predictor pod held by Kueue's admission gate, the Kueue
Workload objects Kueue makes for pods (the vendored CRD checks them), and the LocalQueue; the
emulator serves Kueue's visibility API from those objects. The portal reads them through its
real gateway over HTTP.
"""

from __future__ import annotations

import re

import pytest

from tenants.quota.models import Quota
from tenants.workloads import services
from tenants.workloads.models import VmImage, WorkloadEvent, WorkloadStatus
from tests.factories import hami_gpu_node

from .conftest import H100, INFERENCE_SPEC
from .openssh_keys import ed25519_public

ISVC = ("serving.kserve.io/v1beta1", "InferenceService")
KUEUE = "kueue.x-k8s.io/v1beta2"
VISIBILITY = re.compile(r"/apis/visibility\.kueue\.x-k8s\.io/v1beta2/namespaces/[^/]+"
                        r"/localqueues/[^/]+/pendingworkloads")
SHORT = ("couldn't assign flavors to pod set main: insufficient unused quota for "
         "nvidia.com/gpu in flavor h100, 2 more needed")

pytestmark = pytest.mark.django_db


# Minimum 0: its replicas queue in the tenant's LocalQueue `default`, behind the tenant's other
# work (an endpoint with a minimum has a queue of its own: test_endpoint_queues).
ENDPOINT = {**INFERENCE_SPEC, "min_replicas": 0}


def _launch(tenant, who, name="chat", spec=None):
    workload = services.workload_launch(tenant=tenant, actor=who, kind="inference", name=name,
                                        spec=spec or ENDPOINT)
    services.workload_reconcile(workload_id=workload.pk)
    return workload


def _pod(kube_emulator, tenant, name, *, gated=True, isvc="chat"):
    """Play KServe (the predictor's pod, with the endpoint's labels) and Kueue's gate."""
    stored = kube_emulator.get_object(*ISVC, isvc, tenant.namespace)
    spec = {"containers": [{"name": "kserve-container", "image": "vllm"}]}
    if gated:
        spec["schedulingGates"] = [{"name": "kueue.x-k8s.io/admission"}]
    return kube_emulator.put_object({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": tenant.namespace,
                     "labels": {**stored["metadata"]["labels"],
                                "serving.kserve.io/inferenceservice": isvc}},
        "spec": spec,
        "status": {"phase": "Pending" if gated else "Running"},
    })


def _local_queue(kube_emulator, tenant, name="default", cluster_queue=""):
    kube_emulator.put_object({
        "apiVersion": KUEUE, "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": tenant.namespace},
        "spec": {"clusterQueue": cluster_queue or f"tenant-{tenant.slug}"},
    })


def _kueue_workload(kube_emulator, namespace, name, *, pod=None, gpus=2, priority=0,
                    conditions=None, queue="default", requests=None):
    """Play Kueue: the Workload it makes for a pod (owned by it, labelled with its uid)."""
    meta = {"name": name, "namespace": namespace}
    if pod is not None:
        uid = pod["metadata"]["uid"]
        meta["labels"] = {"kueue.x-k8s.io/job-uid": uid}
        meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "Pod", "controller": True,
                                    "name": pod["metadata"]["name"], "uid": uid}]
    return kube_emulator.put_object({
        "apiVersion": KUEUE, "kind": "Workload", "metadata": meta,
        "spec": {"queueName": queue, "priority": priority, "podSets": [{
            "name": "main", "count": 1, "template": {"spec": {"containers": [{
                "name": "kserve-container", "image": "vllm",
                "resources": {"requests": requests or {"nvidia.com/gpu": str(gpus)}}}]}}}]},
        "status": {"conditions": conditions if conditions is not None else [_waiting()]},
    })


def _waiting(message=SHORT):
    return {"type": "QuotaReserved", "status": "False", "reason": "Pending",
            "message": message, "lastTransitionTime": "2026-12-06T10:00:00Z"}


def _admitted():
    return {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved",
            "message": "Quota reserved in ClusterQueue tenant-globex",
            "lastTransitionTime": "2026-12-06T10:00:00Z"}


@pytest.fixture
def queued(tenant, tenant_member, gpu_pool, workload_quota, kube_gateway, kube_emulator):
    """Acme, in the research cohort, holds 3 of its 4 H100s; its endpoint `chat` asks for 2
    more and waits behind one workload of higher priority."""
    tenant.cohort = "research"
    tenant.save(update_fields=["cohort"])
    workload_quota()
    Quota.objects.filter(tenant=tenant, resource=H100).update(in_use=3)
    workload = _launch(tenant, tenant_member, spec={**ENDPOINT, "gpus_per_replica": 2})
    _local_queue(kube_emulator, tenant)
    # A job its members submitted with kubectl: no workload of the portal's.
    _kueue_workload(kube_emulator, tenant.namespace, "job-train-0", priority=100)
    pod = _pod(kube_emulator, tenant, "chat-predictor-0")
    _kueue_workload(kube_emulator, tenant.namespace, "pod-chat-predictor-0", pod=pod)
    return workload


SUMMARY = ("2nd in the queue · waits for 2 NVIDIA H100 80GB HBM3 GPUs (flavor h100) · "
           "would borrow 1 from the cohort")


def test_a_queued_endpoint_says_where_it_stands_and_why_on_its_page_and_in_the_api(
    queued, tenant, tenant_member, login,
):
    services.workload_observe(workload_id=queued.pk)
    queued.refresh_from_db()
    assert (queued.status, queued.status_reason) == (WorkloadStatus.PROVISIONING, "Queued")
    assert queued.queue == {
        "position_in_local_queue": 2, "position_in_cluster_queue": 2, "pending": 1, "gpus": 2,
        "flavor": "h100", "would_borrow": 1, "kueue_message": SHORT, "summary": SUMMARY,
    }

    client = login(tenant_member)
    page = client.get(f"/t/{tenant.slug}/workloads/{queued.pk}/").content.decode()
    assert SUMMARY in page
    assert f'Kueue: <samp class="small">{SHORT.replace(chr(39), "&#x27;")}</samp>' in page
    assert 'id="queue-position-unknown"' not in page
    answer = client.get(f"/api/v1/workloads/{queued.pk}/").json()
    assert answer["queue"]["summary"] == SUMMARY
    assert answer["queue"]["position_in_local_queue"] == 2
    assert answer["queue"]["kueue_message"] == SHORT
    assert "queue" not in answer["details"]  # said once, in its own field


def test_the_page_follows_the_queue_as_it_moves(queued, tenant, kube_emulator):
    services.workload_observe(workload_id=queued.pk)
    # The workload ahead is admitted: the endpoint is next.
    kube_emulator.patch_object(KUEUE, "Workload", "job-train-0", tenant.namespace,
                               patch={"status": {"conditions": [_admitted()]}})
    services.workload_observe(workload_id=queued.pk)
    queued.refresh_from_db()
    assert queued.queue["position_in_local_queue"] == 1
    assert queued.queue["summary"].startswith("1st in the queue · ")


@pytest.mark.parametrize("status", [403, 404, 503])
def test_without_the_visibility_api_kueues_message_still_shows_and_the_position_is_unknown(
    queued, tenant, tenant_member, login, kube_emulator, status,
):
    kube_emulator.fail(status, method="GET", path=VISIBILITY, times=5)
    assert services.workload_observe(workload_id=queued.pk) == "progressing"
    queued.refresh_from_db()
    assert queued.status_reason == "Queued"
    assert queued.queue["position_in_local_queue"] is None
    assert queued.queue["kueue_message"] == SHORT
    assert queued.queue["summary"].startswith("position in the queue unknown · waits for 2 ")
    assert not queued.events.filter(kind=WorkloadEvent.Kind.ERROR).exists()
    page = login(tenant_member).get(f"/t/{tenant.slug}/workloads/{queued.pk}/").content.decode()
    assert 'id="queue-position-unknown"' in page
    assert "insufficient unused quota for nvidia.com/gpu in flavor h100" in page


def test_the_sweep_survives_a_visibility_api_that_is_down(queued, kube_emulator):
    kube_emulator.fail(503, method="GET", path=VISIBILITY, times=5)
    assert services.workloads_observe_sweep() == 1
    queued.refresh_from_db()
    assert queued.queue["kueue_message"] == SHORT


def test_the_pending_workloads_are_read_page_by_page_until_a_short_page(
    queued, tenant, kube_emulator, settings,
):
    settings.FLEET_LIST_PAGE_SIZE = 2
    for index in range(3):  # more workloads of higher priority ahead of it: 5th in all
        _kueue_workload(kube_emulator, tenant.namespace, f"pod-eval-{index}", priority=50)
    before = len(kube_emulator.requests("GET"))
    services.workload_observe(workload_id=queued.pk)
    pages = [r for r in kube_emulator.requests("GET")[before:] if VISIBILITY.fullmatch(r.path)]
    assert [(p.params["limit"], p.params["offset"]) for p in pages] == [
        ("2", "0"), ("2", "2"), ("2", "4")]
    queued.refresh_from_db()
    assert queued.queue["position_in_local_queue"] == 5


def test_the_sweep_reads_kueue_a_bounded_number_of_times_and_only_for_queued_workloads(
    queued, tenant, tenant_member, kube_emulator,
):
    Quota.objects.filter(tenant=tenant, resource=H100).update(limit=8)
    second = _launch(tenant, tenant_member, name="chat2")
    pod = _pod(kube_emulator, tenant, "chat2-predictor-0", isvc="chat2")
    _kueue_workload(kube_emulator, tenant.namespace, "pod-chat2-predictor-0", pod=pod, gpus=1)
    before = len(kube_emulator.requests("GET"))
    assert services.workloads_observe_sweep() == 2
    reads = [r.path for r in kube_emulator.requests("GET")[before:]]
    # One list of Kueue's Workloads (in the one namespace both live in), one page of the
    # tenant's LocalQueue, whatever the number of queued workloads.
    assert reads.count(f"/apis/{KUEUE}/namespaces/{tenant.namespace}/workloads") == 1
    assert len([p for p in reads if VISIBILITY.fullmatch(p)]) == 1
    second.refresh_from_db()
    assert second.queue["position_in_local_queue"] == 3
    assert second.queue["summary"].startswith("3rd in the queue · waits for 1 NVIDIA H100")

    # Once Kueue admits them (the gates gone), a sweep no longer reads Kueue at all.
    for name in ("chat-predictor-0", "chat2-predictor-0"):
        kube_emulator.patch_object("v1", "Pod", name, tenant.namespace,
                                   patch={"spec": {"schedulingGates": None}})
    before = len(kube_emulator.requests("GET"))
    services.workloads_observe_sweep()
    reads = [r.path for r in kube_emulator.requests("GET")[before:]]
    assert not [p for p in reads if "kueue" in p]
    second.refresh_from_db()
    assert second.queue is None


def _preempted(uid, job_uid, reason="InCohortReclamation",
               why="reclamation within the cohort", at="2026-12-06T10:05:00Z"):
    message = (f"Preempted to accommodate a workload (UID: {uid}, JobUID: {job_uid}) due to "
               f"{why}; preemptor path: /research/tenant-globex; preemptee path: "
               "/research/tenant-acme")
    return [
        _waiting(),
        {"type": "Evicted", "status": "True", "reason": "Preempted", "message": message,
         "lastTransitionTime": at},
        {"type": "Preempted", "status": "True", "reason": reason, "message": message,
         "lastTransitionTime": at},
    ]


def test_a_preemption_is_on_the_timeline_once_naming_the_tenant_and_endpoint_that_took_it(
    queued, tenant, tenant_member, other_tenant, other_tenant_member, login, kube_emulator,
):
    other_tenant.cohort = "research"
    other_tenant.save(update_fields=["cohort"])
    for resource, limit in {H100: 4, "cpu": 32, "memory-gib": 256, "count:inference": 1}.items():
        Quota.objects.create(tenant=other_tenant, resource=resource, limit=limit)
    serve = _launch(other_tenant, other_tenant_member, name="serve")
    serving = _pod(kube_emulator, other_tenant, "serve-predictor-0", gated=False, isvc="serve")
    theirs = _kueue_workload(kube_emulator, other_tenant.namespace, "pod-serve-predictor-0",
                             pod=serving, conditions=[_admitted()])
    chat = kube_emulator.get_object(KUEUE, "Workload", "pod-chat-predictor-0", tenant.namespace)
    kube_emulator.patch_object(KUEUE, "Workload", "pod-chat-predictor-0", tenant.namespace,
                               patch={"status": {"conditions": _preempted(
                                   theirs["metadata"]["uid"], serving["metadata"]["uid"])}})
    assert chat is not None

    # Its own look first (the page polls): it names the preemptor too, from the portal's pods.
    services.workload_observe(workload_id=queued.pk)
    for _ in range(2):  # level-triggered: the same eviction, seen again, is one event
        assert services.workloads_observe_sweep() == 2
    events = list(queued.events.filter(reason="Preempted"))
    assert len(events) == 1
    assert events[0].message.startswith(
        "Its GPUs were reclaimed by tenant Globex Corp's inference endpoint serve "
        "(Globex Corp's own quota, lent until then).")
    assert not serve.events.filter(reason="Preempted").exists()
    page = login(tenant_member).get(f"/t/{tenant.slug}/workloads/{queued.pk}/").content.decode()
    assert "reclaimed by tenant Globex Corp&#x27;s inference endpoint serve" in page

    # Preempted again later: a second eviction, a second event.
    kube_emulator.patch_object(KUEUE, "Workload", "pod-chat-predictor-0", tenant.namespace,
                               patch={"status": {"conditions": _preempted(
                                   theirs["metadata"]["uid"], serving["metadata"]["uid"],
                                   at="2026-12-06T11:00:00Z")}})
    services.workload_observe(workload_id=queued.pk)
    assert queued.events.filter(reason="Preempted").count() == 2


def test_a_preemptor_that_is_no_portal_workload_is_told_in_kueues_words(
    queued, tenant, kube_emulator,
):
    kube_emulator.patch_object(KUEUE, "Workload", "pod-chat-predictor-0", tenant.namespace,
                               patch={"status": {"conditions": _preempted(
                                   "0b7c9d1e-1111-2222-3333-444455556666", "UNKNOWN",
                                   reason="InClusterQueue",
                                   why="prioritization in the ClusterQueue")}})
    services.workload_observe(workload_id=queued.pk)
    before = len(kube_emulator.requests("GET"))
    services.workload_observe(workload_id=queued.pk)
    # Already on the timeline: not named again (no look for the preemptor among all pods).
    assert "/api/v1/pods" not in [r.path for r in kube_emulator.requests("GET")[before:]]
    (event,) = queued.events.filter(reason="Preempted")
    assert event.message.startswith("Kueue preempted it: Preempted to accommodate a workload "
                                    "(UID: 0b7c9d1e-1111-2222-3333-444455556666")


def test_the_schema_documents_the_queue_as_the_api_answers_it(
    queued, tenant_member, login,
):
    from drf_spectacular.generators import SchemaGenerator

    services.workload_observe(workload_id=queued.pk)
    answer = login(tenant_member).get(f"/api/v1/workloads/{queued.pk}/").json()
    components = SchemaGenerator().get_schema(request=None, public=True)["components"]
    field = components["schemas"]["Workload"]["properties"]["queue"]
    assert field["nullable"] is True
    assert field["allOf"] == [{"$ref": "#/components/schemas/WorkloadQueue"}]
    queue = components["schemas"]["WorkloadQueue"]
    assert set(queue["properties"]) == set(queue["required"]) == set(answer["queue"])
    types = {"integer": int, "string": str}
    for name, value in answer["queue"].items():
        spec = queue["properties"][name]
        assert isinstance(value, types[spec["type"]]) or (value is None and spec.get("nullable"))


def test_the_dashboard_shows_queued_admitted_and_borrowed_gpus(
    queued, tenant, tenant_member, login,
):
    Quota.objects.filter(tenant=tenant, resource=H100).update(in_use=5, borrowed=1)
    services.workload_observe(workload_id=queued.pk)
    html = login(tenant_member).get(f"/t/{tenant.slug}/").content.decode()
    card = html[html.index('id="section-gpu-queue"'):html.index('id="section-workloads"')]
    assert 'data-gpus-queued="2"' in card
    assert 'data-gpus-admitted="5"' in card
    assert 'data-gpus-borrowed="1"' in card
    assert "on loan from the research cohort" in card


def test_a_tenant_with_nothing_queued_admitted_or_borrowed_sees_no_queue_card(
    tenant, tenant_member, login,
):
    html = login(tenant_member).get(f"/t/{tenant.slug}/").content.decode()
    assert 'id="section-gpu-queue"' not in html


VM_SHORT = ("couldn't assign flavors to pod set main: insufficient unused quota for "
            "nvidia.com/GH100_H100_SXM5_80GB in flavor gpu-passthrough, 2 more needed")
VM_SUMMARY = ("1st in the queue · waits for 2 NVIDIA H100 80GB HBM3 GPUs "
              "(flavor gpu-passthrough)")


def test_a_queued_vm_says_where_it_stands_and_why_as_an_endpoint_does(
    tenant, tenant_member, gpu_pool, workload_quota, kube_gateway, kube_emulator, login,
):
    """KubeVirt copies the VM template's labels to the VMI and its launcher pod; Kueue holds
    the pod and waits for passthrough quota. The tests play KubeVirt and Kueue."""
    workload_quota()
    VmImage.objects.create(key="ubuntu", label="Ubuntu 24.04 LTS", default_user="ubuntu",
                           container_disk="quay.io/containerdisks/ubuntu:24.04", min_disk_gib=10)
    vm = services.workload_launch(
        tenant=tenant, actor=tenant_member, kind="vm", name="box",
        spec={"image": "ubuntu", "cpu": 2, "memory_gib": 8, "disk_gib": 20, "gpu": H100,
              "gpus": 2, "ssh_public_key": ed25519_public("alice@laptop")})
    services.workload_reconcile(workload_id=vm.pk)
    stored = kube_emulator.get_object("kubevirt.io/v1", "VirtualMachine", "box", tenant.namespace)
    labels = stored["spec"]["template"]["metadata"]["labels"]
    assert labels["kueue.x-k8s.io/queue-name"] == "default"
    vmi = kube_emulator.put_object({
        "apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstance",
        "metadata": {"name": "box", "namespace": tenant.namespace, "labels": labels},
        "spec": stored["spec"]["template"]["spec"], "status": {"phase": "Scheduling"},
    })
    pod = kube_emulator.put_object({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "virt-launcher-box-x7k2p", "namespace": tenant.namespace,
                     "labels": {**labels, "kubevirt.io": "virt-launcher"},
                     "ownerReferences": [{"apiVersion": "kubevirt.io/v1",
                                          "kind": "VirtualMachineInstance", "name": "box",
                                          "uid": vmi["metadata"]["uid"], "controller": True}]},
        "spec": {"containers": [{"name": "compute", "image": "virt-launcher"}],
                 "schedulingGates": [{"name": "kueue.x-k8s.io/admission"}]},
        "status": {"phase": "Pending"},
    })
    _local_queue(kube_emulator, tenant)
    kueue_workload = _kueue_workload(kube_emulator, tenant.namespace,
                                     "pod-virt-launcher-box-x7k2p", pod=pod, priority=500,
                                     conditions=[_waiting(VM_SHORT)])
    kueue_workload["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["resources"] = {
        "requests": {"nvidia.com/GH100_H100_SXM5_80GB": "2"}}
    kube_emulator.put_object(kueue_workload)

    services.workload_observe(workload_id=vm.pk)
    vm.refresh_from_db()

    assert (vm.status, vm.status_reason) == (WorkloadStatus.PROVISIONING, "Queued")
    assert vm.queue["summary"] == VM_SUMMARY
    assert vm.queue["kueue_message"] == VM_SHORT
    client = login(tenant_member)
    assert VM_SUMMARY in client.get(f"/t/{tenant.slug}/workloads/{vm.pk}/").content.decode()
    assert client.get(f"/api/v1/workloads/{vm.pk}/").json()["queue"]["summary"] == VM_SUMMARY


HAMI_SHORT = ("couldn't assign flavors to pod set main: insufficient unused quota for "
              "nvidia.com/gpumem in flavor hami-nvidia-l40s, 12288 more needed")


def test_a_queued_hami_endpoint_is_read_from_the_shares_queue_and_counts_no_gpu(
    tenant, tenant_member, workload_quota, kube_gateway, kube_emulator, login,
):
    hami_gpu_node(gpus=2)
    workload_quota(**{"hami:nvidia-l40s:memory-gib": 48, "hami:nvidia-l40s:cores": 100})
    share = {"model_uri": "hf://Qwen/Qwen2.5-7B-Instruct", "gpu": "hami:nvidia-l40s",
             "gpu_memory_gib": 20, "gpu_cores": 30, "min_replicas": 1, "max_replicas": 1}
    workload = _launch(tenant, tenant_member, spec=share)
    _local_queue(kube_emulator, tenant)
    _local_queue(kube_emulator, tenant, "shares", f"tenant-{tenant.slug}-shares")
    pod = _pod(kube_emulator, tenant, "chat-predictor-0")
    assert pod["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "shares"
    _kueue_workload(kube_emulator, tenant.namespace, "pod-chat-predictor-0", pod=pod,
                    queue="shares", conditions=[_waiting(HAMI_SHORT)], requests={
                        "nvidia.com/gpu": "1", "nvidia.com/gpumem": "20480",
                        "nvidia.com/gpucores": "30"})

    before = len(kube_emulator.requests("GET"))
    services.workload_observe(workload_id=workload.pk)

    reads = [r.path for r in kube_emulator.requests("GET")[before:] if VISIBILITY.fullmatch(r.path)]
    assert reads == [f"/apis/visibility.kueue.x-k8s.io/v1beta2/namespaces/{tenant.namespace}"
                     "/localqueues/shares/pendingworkloads"]
    workload.refresh_from_db()
    assert workload.queue == {
        "position_in_local_queue": 1, "position_in_cluster_queue": 1, "pending": 1, "gpus": 0,
        "flavor": "hami-nvidia-l40s", "would_borrow": 0, "kueue_message": HAMI_SHORT,
        "summary": "1st in the queue · waits for 1 NVIDIA L40S HAMi share "
                   "(flavor hami-nvidia-l40s)",
    }
    # A share is no GPU: the dashboard's queued, admitted and borrowed GPUs leave it out.
    html = login(tenant_member).get(f"/t/{tenant.slug}/").content.decode()
    assert 'id="section-gpu-queue"' not in html
