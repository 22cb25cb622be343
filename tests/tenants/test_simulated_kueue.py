"""The simulated fleet plays Kueue through the objects a real cluster has: tenants' queues
applied by the tenant reconcile, pods sent to a LocalQueue gated and given a Workload, admission
within quota and by borrowing in a cohort, preemption, and the visibility API's pending
workloads. Driven through the gateway and the services, read back as the portal reads it."""

from decimal import Decimal

import pytest

from core.fleet.base import Manifest
from demo.fleet import simulated_kueue_admission as admission
from demo.fleet.simulated_kueue_admission import parse
from inventory.resource_classes import GPU_MODELS
from tenants.enforcement.manifests import (
    KUEUE,
    RESERVED_FOR_KEY,
    Grant,
    TenantSpec,
    scheduling_for,
    tenant_manifests,
)
from tenants.enforcement.services import tenant_reconcile
from tenants.models import Quota, Tenant
from tenants.workloads import services
from tenants.workloads.kinds.base import queued_by_kueue
from tests.factories import QuotaFactory

from .kube_schemas import schema_errors
from .kueue_pods import hami_pod, queued_pod

L40S = "gpu:nvidia-l40s"
PRODUCT = GPU_MODELS["nvidia-l40s"].product_label
SERVER_FIELDS = ("uid", "resourceVersion", "creationTimestamp", "generation")


@pytest.fixture
def fleet(simulated_gateway, settings):
    settings.FLEET_SIMULATED_READY_SECONDS = 0
    simulated_gateway.apply(manifests=[
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"l40s-{n}", "labels": {
            "nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": PRODUCT,
            "nvidia.com/gpu.count": "8"}}, "spec": {}}
        for n in range(3)
    ])
    return simulated_gateway


def _tenant(slug: str, *, gpus: int, cohort: str = "", isolation: str = "shared",
            borrowing: int | None = None, lending: int | None = None,
            lends: bool = False) -> Tenant:
    tenant = Tenant.objects.create(slug=slug, name=slug.title(), cohort=cohort,
                                   isolation=isolation, lends_reserved_gpus=lends)
    QuotaFactory(tenant=tenant, resource=L40S, limit=gpus, borrowing_limit=borrowing,
                 lending_limit=lending)
    return tenant


def _reconcile(*tenants: Tenant) -> None:
    for tenant in tenants:  # each tenant's queues (a cohort's members know each other)
        tenant_reconcile(tenant_id=tenant.pk)


def _submit(gateway, tenant: Tenant, name: str, gpus: int, *,
            priority: str = "portal-batch") -> None:
    """A pod sent to the tenant's LocalQueue, as the portal's kinds label theirs."""
    gateway.apply(manifests=[queued_pod(tenant.namespace, name, gpus=gpus, priority=priority,
                                        product=PRODUCT)])


def _pod(gateway, tenant: Tenant, name: str) -> Manifest:
    return gateway.get(api_version="v1", kind="Pod", name=name, namespace=tenant.namespace)


def _workloads(gateway, tenant: Tenant) -> dict[str, Manifest]:
    """The tenant's Workloads by their pod's name."""
    found = gateway.list(api_version=KUEUE, kind="Workload", namespace=tenant.namespace)
    return {w["metadata"]["ownerReferences"][0]["name"]: w for w in found}


def _condition(workload: Manifest, kind: str) -> dict:
    return next(c for c in workload["status"]["conditions"] if c["type"] == kind)


def _admitted(gateway, tenant: Tenant) -> set[str]:
    return {name for name, w in _workloads(gateway, tenant).items()
            if _condition(w, "QuotaReserved")["status"] == "True"}


def _usage(gateway, tenant: Tenant) -> dict:
    queue = gateway.get(api_version=KUEUE, kind="ClusterQueue", name=f"tenant-{tenant.slug}")
    (gpu,) = [f for f in queue["status"]["flavorsUsage"]
              if any(r["name"] == "nvidia.com/gpu" for r in f["resources"])]
    cell = next(r for r in gpu["resources"] if r["name"] == "nvidia.com/gpu")
    return {"total": cell["total"], "borrowed": cell["borrowed"],
            "pending": queue["status"]["pendingWorkloads"],
            "admitted": queue["status"]["admittedWorkloads"]}


def _valid(workload: Manifest) -> list[str]:
    meta = {k: v for k, v in workload["metadata"].items() if k not in SERVER_FIELDS}
    return schema_errors({**workload, "metadata": meta})


def test_a_queued_pod_waits_gated_and_is_admitted_within_its_tenants_quota(db, fleet):
    acme = _tenant("acme", gpus=4)
    _reconcile(acme)
    for name, gpus in (("train-1", 2), ("train-2", 2), ("train-3", 1)):
        _submit(fleet, acme, name, gpus)

    assert _admitted(fleet, acme) == {"train-1", "train-2"}
    waiting = _workloads(fleet, acme)["train-3"]
    assert _condition(waiting, "QuotaReserved") | {"lastTransitionTime": None} == {
        "type": "QuotaReserved", "status": "False", "reason": "Pending",
        "lastTransitionTime": None,
        "message": "couldn't assign flavors to pod set main: insufficient unused quota for "
                   "nvidia.com/gpu in flavor gpu-nvidia-l40s, 1 more needed",
    }
    assert queued_by_kueue(_pod(fleet, acme, "train-3"))
    admitted = _pod(fleet, acme, "train-1")
    assert not queued_by_kueue(admitted) and admitted["spec"]["nodeName"].startswith("l40s-")
    first = _workloads(fleet, acme)["train-1"]
    assert first["status"]["admission"] == {"clusterQueue": "tenant-acme", "podSetAssignments": [
        {"name": "main", "flavors": {"nvidia.com/gpu": "gpu-nvidia-l40s"},
         "resourceUsage": {"nvidia.com/gpu": "2"}, "count": 1}]}
    assert _condition(first, "Admitted")["status"] == "True"
    assert first["spec"]["priority"] == 100
    assert first["spec"]["priorityClassRef"]["name"] == "portal-batch"
    assert _usage(fleet, acme) == {"total": "4", "borrowed": "0", "pending": 1, "admitted": 2}
    local = fleet.get(api_version=KUEUE, kind="LocalQueue", name="default",
                      namespace=acme.namespace)
    assert (local["status"]["pendingWorkloads"], local["status"]["admittedWorkloads"]) == (1, 2)

    # Room frees up: the waiting one is admitted and bound.
    fleet.delete(api_version="v1", kind="Pod", name="train-1", namespace=acme.namespace)
    assert _admitted(fleet, acme) == {"train-2", "train-3"}
    assert _pod(fleet, acme, "train-3")["spec"]["nodeName"]


def test_the_workloads_are_valid_against_kueues_schema(db, fleet):
    acme = _tenant("acme", gpus=2)
    _reconcile(acme)
    _submit(fleet, acme, "low", 2)
    _submit(fleet, acme, "waiting", 2)
    assert _admitted(fleet, acme) == {"low"}
    _submit(fleet, acme, "high", 2, priority="portal-serving")  # preempts "low"

    workloads = _workloads(fleet, acme)
    assert {_condition(w, "QuotaReserved")["reason"] for w in workloads.values()} == {
        "QuotaReserved", "Pending", "Preempted"}
    assert {name: _valid(w) for name, w in workloads.items()} == {name: [] for name in workloads}
    queue = fleet.get(api_version=KUEUE, kind="ClusterQueue", name="tenant-acme")
    assert _valid(queue) == []


def test_a_cohort_member_borrows_what_the_others_leave_idle_up_to_its_limit(db, fleet):
    lender = _tenant("lender", gpus=8, cohort="pool")
    borrower = _tenant("borrower", gpus=2, cohort="pool", borrowing=4)
    _reconcile(lender, borrower)
    for n in range(4):
        _submit(fleet, borrower, f"job-{n}", 2)

    assert _admitted(fleet, borrower) == {"job-0", "job-1", "job-2"}  # 2 own + 4 borrowed
    message = _condition(_workloads(fleet, borrower)["job-3"], "QuotaReserved")["message"]
    assert message.endswith("in flavor gpu-nvidia-l40s, 2 more needed")
    assert _usage(fleet, borrower) == {"total": "6", "borrowed": "4", "pending": 1,
                                       "admitted": 3}
    assert _usage(fleet, lender)["borrowed"] == "0"
    # The portal reads it as before: what Kueue counts as borrowed, into the quota.
    _reconcile(borrower, lender)
    quota = Quota.objects.get(tenant=borrower, resource=L40S)
    assert (quota.in_use, quota.borrowed) == (6, 4)
    assert Quota.objects.get(tenant=lender, resource=L40S).borrowed == 0


def test_a_lenders_lending_limit_caps_what_the_cohort_borrows(db, fleet):
    lender = _tenant("lender", gpus=8, cohort="pool", lending=3)
    borrower = _tenant("borrower", gpus=2, cohort="pool")
    _reconcile(lender, borrower)
    for n in range(6):
        _submit(fleet, borrower, f"job-{n}", 1)

    assert len(_admitted(fleet, borrower)) == 5  # 2 own + the 3 the lender lends


def _reserved_node(gateway, tenant: Tenant) -> str:
    """An L40S node reserved for the dedicated `tenant` (labelled and tainted for it)."""
    name = f"l40s-{tenant.slug}"
    gateway.apply(manifests=[{
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {
            "nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": PRODUCT,
            "nvidia.com/gpu.count": "8", RESERVED_FOR_KEY: tenant.slug}},
        "spec": {"taints": [{"key": RESERVED_FOR_KEY, "value": tenant.slug,
                             "effect": "NoSchedule"}]},
    }])
    return name


def _submit_reserved(gateway, tenant: Tenant, name: str, gpus: int) -> None:
    """A dedicated tenant's pod, pinned to its reserved nodes as the portal's kinds pin them."""
    pod = queued_pod(tenant.namespace, name, gpus=gpus, priority="portal-batch", product=PRODUCT)
    pinned = scheduling_for(TenantSpec(slug=tenant.slug, isolation="dedicated"))
    pod["spec"]["nodeSelector"] |= pinned["nodeSelector"]
    pod["spec"]["tolerations"] = pinned["tolerations"]
    gateway.apply(manifests=[pod])


def _flavors(gateway, tenant: Tenant, name: str) -> set[str]:
    workload = _workloads(gateway, tenant)[name]
    return set(workload["status"]["admission"]["podSetAssignments"][0]["flavors"].values())


def _flavor_usage(gateway, tenant: Tenant) -> dict[str, tuple[str, str]]:
    """Per GPU flavor of the tenant's ClusterQueue: GPUs in use and borrowed, as Kueue says."""
    queue = gateway.get(api_version=KUEUE, kind="ClusterQueue", name=f"tenant-{tenant.slug}")
    return {f["name"]: next((r["total"], r["borrowed"]) for r in f["resources"]
                            if r["name"] == "nvidia.com/gpu")
            for f in queue["status"]["flavorsUsage"]
            if any(r["name"] == "nvidia.com/gpu" for r in f["resources"])}


def test_a_dedicated_tenant_lends_nothing_unless_it_opts_in(db, fleet):
    vault = _tenant("vault", gpus=8, cohort="pool", isolation="dedicated")
    borrower = _tenant("borrower", gpus=2, cohort="pool")
    _reserved_node(fleet, vault)
    _reconcile(vault, borrower)
    queue = fleet.get(api_version=KUEUE, kind="ClusterQueue", name="tenant-vault")
    assert "cohortName" not in queue["spec"]
    borrowers = fleet.get(api_version=KUEUE, kind="ClusterQueue", name="tenant-borrower")
    assert "reserved" not in str(borrowers["spec"])
    _submit(fleet, borrower, "job-0", 2)
    _submit(fleet, borrower, "job-1", 1)

    assert _admitted(fleet, borrower) == {"job-0"}
    assert _usage(fleet, borrower)["borrowed"] == "0"
    assert not any(p["spec"].get("nodeName") == "l40s-vault"
                   for p in fleet.list(api_version="v1", kind="Pod",
                                       namespace=borrower.namespace))


def test_a_shared_tenant_borrows_a_lenders_idle_reserved_gpus_and_gives_them_back(db, fleet):
    vault = _tenant("vault", gpus=8, cohort="pool", isolation="dedicated", lends=True)
    borrower = _tenant("borrower", gpus=2, cohort="pool")
    reserved = _reserved_node(fleet, vault)
    _reconcile(vault, borrower)
    for n in range(5):
        _submit(fleet, borrower, f"job-{n}", 2)

    # 2 of its own, then all 8 of vault's idle reserved GPUs, on vault's node.
    assert _admitted(fleet, borrower) == {f"job-{n}" for n in range(5)}
    assert _flavors(fleet, borrower, "job-0") == {"gpu-nvidia-l40s"}
    assert _flavors(fleet, borrower, "job-4") == {"gpu-nvidia-l40s-reserved-vault"}
    borrowed = _pod(fleet, borrower, "job-4")
    assert borrowed["spec"]["nodeName"] == reserved  # Kueue gave it the flavor's toleration
    assert borrowed["spec"]["nodeSelector"][RESERVED_FOR_KEY] == "vault"
    assert _flavor_usage(fleet, borrower) == {
        "gpu-nvidia-l40s": ("2", "0"), "gpu-nvidia-l40s-reserved-vault": ("8", "8")}
    # The portal reads it: the borrower's quota line, and what the lender lends right now.
    _reconcile(borrower, vault)
    quota = Quota.objects.get(tenant=borrower, resource=L40S)
    assert (quota.in_use, quota.borrowed) == (10, 8)
    assert Quota.objects.get(tenant=vault, resource=L40S).lent == 8

    _submit_reserved(fleet, vault, "own", 4)  # its own quota: reclaimed from the borrower

    assert _admitted(fleet, vault) == {"own"}
    assert _pod(fleet, vault, "own")["spec"]["nodeName"] == reserved
    assert _admitted(fleet, borrower) == {"job-0", "job-1", "job-2"}  # the newest gave way
    assert _condition(_workloads(fleet, borrower)["job-4"], "Preempted")["reason"] == (
        "InCohortReclamation")
    gated = _pod(fleet, borrower, "job-4")  # made again as its template was: not pinned
    assert queued_by_kueue(gated) and RESERVED_FOR_KEY not in gated["spec"]["nodeSelector"]
    assert "tolerations" not in gated["spec"]
    _reconcile(vault)
    assert Quota.objects.get(tenant=vault, resource=L40S).lent == 4

    # Never preempted: what vault runs stays, even for a borrower's higher priority.
    _submit_reserved(fleet, vault, "more", 4)
    assert _admitted(fleet, vault) == {"own", "more"}
    assert _admitted(fleet, borrower) == {"job-0"}  # the rest went back to vault
    _submit(fleet, borrower, "urgent", 4, priority="portal-serving")
    assert _admitted(fleet, vault) == {"own", "more"}
    assert _flavor_usage(fleet, borrower)["gpu-nvidia-l40s-reserved-vault"] == ("0", "0")
    assert "urgent" not in _admitted(fleet, borrower)


def test_a_lender_reclaims_its_quota_by_preempting_the_newest_borrower(db, fleet):
    lender = _tenant("lender", gpus=8, cohort="pool")
    borrower = _tenant("borrower", gpus=2, cohort="pool")
    _reconcile(lender, borrower)
    for n in range(5):
        _submit(fleet, borrower, f"job-{n}", 2)
    assert len(_admitted(fleet, borrower)) == 5  # 2 own + 8 borrowed: the whole cohort

    _submit(fleet, lender, "serve", 4, priority="portal-batch")  # its own quota: reclaimed

    assert _admitted(fleet, lender) == {"serve"}
    assert _pod(fleet, lender, "serve")["spec"]["nodeName"]
    assert _admitted(fleet, borrower) == {"job-0", "job-1", "job-2"}  # the newest two gave way
    preemptor = _workloads(fleet, lender)["serve"]
    victim = _workloads(fleet, borrower)["job-4"]
    expected = (
        f"Preempted to accommodate a workload (UID: {preemptor['metadata']['uid']}, JobUID: "
        f"{_pod(fleet, lender, 'serve')['metadata']['uid']}) due to reclamation within the cohort"
    )
    assert {k: v for k, v in _condition(victim, "Preempted").items()
            if k != "lastTransitionTime"} == {
        "type": "Preempted", "status": "True", "reason": "InCohortReclamation",
        "message": expected}
    evicted = _condition(victim, "Evicted")
    assert (evicted["status"], evicted["reason"], evicted["message"]) == (
        "True", "Preempted", expected)
    assert _condition(victim, "QuotaReserved")["status"] == "False"
    gated = _pod(fleet, borrower, "job-4")
    assert queued_by_kueue(gated) and not gated["spec"].get("nodeName")
    assert _usage(fleet, borrower) == {"total": "6", "borrowed": "4", "pending": 2,
                                       "admitted": 3}


def test_a_higher_priority_workload_preempts_a_lower_one_in_its_own_queue(db, fleet):
    acme = _tenant("acme", gpus=4)
    _reconcile(acme)
    _submit(fleet, acme, "batch-1", 2)
    _submit(fleet, acme, "batch-2", 2)
    _submit(fleet, acme, "same-priority", 2)  # waits: no preemption among equals
    assert _admitted(fleet, acme) == {"batch-1", "batch-2"}

    _submit(fleet, acme, "endpoint", 2, priority="portal-serving")

    assert _admitted(fleet, acme) == {"batch-1", "endpoint"}
    victim = _workloads(fleet, acme)["batch-2"]
    preempted = _condition(victim, "Preempted")
    assert preempted["reason"] == "InClusterQueue"
    assert preempted["message"].endswith("due to prioritization in the ClusterQueue")
    assert queued_by_kueue(_pod(fleet, acme, "batch-2"))
    assert not queued_by_kueue(_pod(fleet, acme, "endpoint"))


def test_pending_workloads_come_in_queue_order_one_page_at_a_time(db, fleet):
    acme = _tenant("acme", gpus=1)
    _reconcile(acme)
    _submit(fleet, acme, "serving", 1, priority="portal-serving")
    for name, priority in (("job-1", "portal-batch"), ("job-2", "portal-interactive"),
                           ("job-3", "portal-batch"), ("job-4", "portal-batch")):
        _submit(fleet, acme, name, 1, priority=priority)

    def page(offset):
        items = fleet.pending_workloads(namespace=acme.namespace, local_queue="default",
                                        limit=2, offset=offset)
        return [(i["metadata"]["ownerReferences"][0]["name"], i["priority"],
                 i["positionInClusterQueue"], i["positionInLocalQueue"]) for i in items]

    assert page(0) == [("job-2", 500, 0, 0), ("job-1", 100, 1, 1)]
    assert page(2) == [("job-3", 100, 2, 2), ("job-4", 100, 3, 3)]
    assert page(4) == []
    (item,) = fleet.pending_workloads(namespace=acme.namespace, local_queue="default",
                                      limit=1, offset=0)
    assert set(item) == {"metadata", "priority", "localQueueName", "positionInClusterQueue",
                         "positionInLocalQueue"}
    assert set(item["metadata"]) == {"name", "namespace", "creationTimestamp", "ownerReferences"}
    assert item["localQueueName"] == "default"
    assert fleet.pending_workloads(namespace=acme.namespace, local_queue="other", limit=5,
                                   offset=0) == []


def test_reclaim_never_takes_a_queue_below_its_nominal_quota():
    """Each endpoint's queue holds its minimum replicas as nominal quota (in its tenant's
    Cohort, under the shared one): a lender taking its quota back preempts only what is
    borrowed, though Kueue takes the most recently admitted first."""
    gpu = "nvidia.com/gpu"

    def queue(name, cohort, nominal):
        return admission.ClusterQueue(
            name=name, cohort=cohort, groups=(((gpu,), ("f",)),),
            cells={("f", gpu): admission.Cell(Decimal(nominal))},
            within_cluster_queue="LowerPriority", reclaim_within_cohort="Any")

    queues = {q.name: q for q in (queue("lender", "pool", 2), queue("chat", "acme", 1),
                                  queue("embed", "acme", 1))}
    cohorts = {"acme": admission.Cohort("acme", parent="pool")}

    def entry(name, cluster_queue, priority, created, gpus=1, **extra):
        return admission.Entry(namespace="ns", name=name, uid=name, job_uid=name, local_queue="lq",
                               cluster_queue=cluster_queue, priority=priority,
                               created=f"2026-01-01T00:00:0{created}Z",
                               requests={gpu: Decimal(gpus)}, **extra)

    held = {gpu: "f"}
    running = [entry("chat-1", "chat", 1000, 1, admitted=dict(held)),
               entry("chat-2", "chat", 1000, 2, admitted=dict(held)),  # borrowed from the lender
               entry("embed-1", "embed", 1000, 3, admitted=dict(held))]  # the newest
    reclaim = entry("reclaim", "lender", 100, 4, gpus=2)  # its whole nominal quota
    verdicts = admission.schedule(queues, {}, [*running, reclaim], cohorts)
    assert {key[1]: v.reason for key, v in verdicts.items() if v.preempted_by} == {
        "chat-2": "InCohortReclamation"}
    assert verdicts[reclaim.key].admitted == held
    assert [e.name for e in running if e.admitted] == ["chat-1", "embed-1"]

    # The lender wants more than it lent: no minimum is borrowed, it waits.
    more = entry("more", "lender", 100, 5)
    verdicts = admission.schedule(queues, {}, [*running, reclaim, more], cohorts)
    assert verdicts[more.key].pending.endswith("1 more needed")
    assert [e.name for e in running if e.admitted] == ["chat-1", "embed-1"]


def test_a_hami_share_is_admitted_into_its_models_flavor_of_the_shares_queue_by_its_selector():
    spec = TenantSpec(slug="atlas", isolation="shared", grants=(
        Grant("hami:nvidia-h100-80gb:memory-gib", 40), Grant("hami:nvidia-h100-80gb:cores", 50),
        Grant("hami:nvidia-l40s:memory-gib", 48), Grant("hami:nvidia-l40s:cores", 100),
        Grant("cpu", 16), Grant("memory-gib", 64)))
    manifests = tenant_manifests(spec)
    queues = {m["metadata"]["name"]: admission.cluster_queue(m)
              for m in manifests if m["kind"] == "ClusterQueue"}
    flavors = {m["metadata"]["name"]: admission.flavor(m)
               for m in manifests if m["kind"] == "ResourceFlavor"}

    def share(name, memory_gib):
        return admission.Entry(
            namespace="tenant-atlas", name=name, uid=name, job_uid=name, local_queue="shares",
            cluster_queue="tenant-atlas-shares", priority=1000,
            created=f"2026-01-01T00:00:0{name[-1]}Z",
            requests={"cpu": Decimal(2), "memory": parse("8Gi"), "nvidia.com/gpu": Decimal(1),
                      "nvidia.com/gpumem": Decimal(memory_gib * 1024),
                      "nvidia.com/gpucores": Decimal(30)},
            node_selector={"nvidia.com/gpu.product": PRODUCT})

    first, second, third = share("s1", 20), share("s2", 20), share("s3", 64)
    verdicts = admission.schedule(queues, flavors, [first, second, third])

    # The H100 flavor comes first, but the L40S selector rules it out: the L40S flavor takes
    # all three resources of the group, and the pod's CPU and memory go to the default flavor.
    assert verdicts[first.key].admitted == {
        "cpu": "portal-default", "memory": "portal-default", "nvidia.com/gpu": "hami-nvidia-l40s",
        "nvidia.com/gpumem": "hami-nvidia-l40s", "nvidia.com/gpucores": "hami-nvidia-l40s"}
    assert verdicts[second.key].admitted is not None
    # More than the tenant's whole L40S memory grant: no wait makes room, in Kueue's words.
    assert verdicts[third.key].pending == (
        "couldn't assign flavors to pod set main: flavor hami-nvidia-h100-80gb doesn't match "
        "node affinity, insufficient quota for nvidia.com/gpumem in flavor hami-nvidia-l40s, "
        "previously considered podsets requests (0) + current podset request (65536) > "
        "maximum capacity (49152)")
    # Nothing of the shares reaches the whole-GPU queue.
    assert "nvidia.com/gpumem" not in {r for names, _ in queues["tenant-atlas"].groups
                                       for r in names}


def _stateful_set(pod: Manifest, *, replicas: int = 1) -> Manifest:
    """A StatefulSet (as a notebook's) whose pod template has `pod`'s labels and spec."""
    meta = pod["metadata"]
    selector = {"app": meta["name"]}
    return {
        "apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": {"name": meta["name"], "namespace": meta["namespace"]},
        "spec": {"replicas": replicas, "serviceName": meta["name"],
                 "selector": {"matchLabels": selector},
                 "template": {"metadata": {"labels": {**meta["labels"], **selector}},
                              "spec": pod["spec"]}},
    }


def _replicas_ready(gateway, tenant: Tenant, name: str) -> int:
    found = gateway.get(api_version="apps/v1", kind="StatefulSet", name=name,
                        namespace=tenant.namespace)
    return found["status"]["readyReplicas"]


def test_a_stateful_sets_pod_is_queued_like_any_other_and_stopping_it_gives_its_gpus_back(
    db, fleet
):
    acme = _tenant("acme", gpus=2)
    _reconcile(acme)
    notebook = queued_pod(acme.namespace, "nb-lab", gpus=2, priority="portal-interactive",
                          product=PRODUCT)
    fleet.apply(manifests=[_stateful_set(notebook)])

    running = _replicas_ready(fleet, acme, "nb-lab")
    _submit(fleet, acme, "train-1", 1)
    waiting = _admitted(fleet, acme)
    priority = _workloads(fleet, acme)["nb-lab-0"]["spec"]["priority"]
    fleet.apply(manifests=[_stateful_set(notebook, replicas=0)])
    stopped = _replicas_ready(fleet, acme, "nb-lab")

    assert running == 1
    assert waiting == {"nb-lab-0"}
    assert priority == 500
    assert (stopped, _pod(fleet, acme, "nb-lab-0")) == (0, None)
    assert _admitted(fleet, acme) == {"train-1"}
    assert _usage(fleet, acme) == {"total": "1", "borrowed": "0", "pending": 0, "admitted": 1}
    assert _pod(fleet, acme, "train-1")["spec"]["nodeName"].startswith("l40s-")


def test_a_stateful_sets_hami_pod_goes_through_the_shares_queue_to_a_node_hami_shares(db, fleet):
    acme = _tenant("acme", gpus=1)
    QuotaFactory(tenant=acme, resource="hami:nvidia-l40s:memory-gib", limit=48)
    QuotaFactory(tenant=acme, resource="hami:nvidia-l40s:cores", limit=100)
    _reconcile(acme)
    fleet.apply(manifests=[{"apiVersion": "v1", "kind": "Node", "metadata": {
        "name": "l40s-hami", "labels": {"gpu": "on", "nvidia.com/gpu.product": PRODUCT}},
        "spec": {}}])
    share = hami_pod(acme.namespace, "nb-share", memory_gib=20, cores=30,
                     priority="portal-interactive", product=PRODUCT)
    fleet.apply(manifests=[_stateful_set(share)])

    ready = _replicas_ready(fleet, acme, "nb-share")
    workload = _workloads(fleet, acme)["nb-share-0"]
    pod = _pod(fleet, acme, "nb-share-0")
    fleet.apply(manifests=[_stateful_set(share, replicas=0)])
    _replicas_ready(fleet, acme, "nb-share")

    assert ready == 1
    assert workload["status"]["admission"]["clusterQueue"] == "tenant-acme-shares"
    assert pod["spec"]["nodeName"] == "l40s-hami"
    assert _workloads(fleet, acme) == {}


def test_the_demo_shows_borrowing_reclaim_and_waiting_in_kueues_words_and_the_portals(db):
    from io import StringIO

    from django.core.management import call_command

    from core.fleet import get_gateway
    from tenants.models import Workload, WorkloadEvent

    call_command("load_demo", stdout=StringIO())

    # Atlas's sweep and benchmark cluster borrow Nova's L40S; Nova's 70B endpoint took back
    # what one of the cluster's workers held, and that worker waits in Atlas's queue.
    atlas = Quota.objects.get(tenant__slug="atlas", resource=L40S)
    assert (atlas.limit, atlas.in_use, atlas.borrowed) == (8, 14, 6)  # lent by Nova
    bench = Workload.objects.get(tenant__slug="atlas", name="bench-slurm")
    assert (bench.status, bench.status_reason) == ("provisioning", "Queued")
    assert bench.details["queue"]["summary"] == (
        "1st in the queue · waits for 2 NVIDIA L40S GPUs (flavor gpu-nvidia-l40s) · "
        "would borrow 2 from the cohort")
    (preempted,) = bench.events.filter(reason="Preempted")
    assert preempted.message.startswith(
        "Its GPUs were reclaimed by tenant Nova Inference's inference endpoint chat-70b "
        "(Nova Inference's own quota, lent until then).")
    assert Workload.objects.get(tenant__slug="nova", name="chat-70b").status == "ready"

    # Orbit's fine-tuning jobs hold its A100 quota: the fourth waits, its adapter cluster next.
    orbit = Tenant.objects.get(slug="orbit")
    waiting = _workloads(get_gateway("main"), orbit)["lora-finetune-3"]
    assert _condition(waiting, "QuotaReserved")["message"] == (
        "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu "
        "in flavor gpu-nvidia-a100-80gb, 8 more needed")
    first, second = get_gateway("main").pending_workloads(namespace=orbit.namespace,
                                                    local_queue="default", limit=10, offset=0)
    assert first["metadata"]["name"] == waiting["metadata"]["name"]
    adapters = Workload.objects.get(tenant=orbit, name="adapter-slurm")
    assert second["metadata"]["ownerReferences"][0]["name"] == "adapter-slurm-workers-0"
    assert adapters.status_reason == "Queued"
    assert adapters.details["queue"]["position_in_local_queue"] == 2
    assert not WorkloadEvent.objects.filter(workload=adapters, reason="Preempted").exists()
    # Orbit's notebook VM (on Frankfurt's cluster) goes through Orbit's queue there: its A100
    # passed through is metered in the passthrough group, apart from the containers' A100s.
    notebook = Workload.objects.get(tenant=orbit, name="notebook")
    assert notebook.cluster_id == "fra1"
    services.workload_observe(workload_id=notebook.pk)
    (launcher,) = [w for name, w in _workloads(get_gateway("fra1"), orbit).items()
                   if name.startswith("virt-launcher-notebook-")]
    assert _condition(launcher, "QuotaReserved")["status"] == "True"
    assert launcher["status"]["admission"]["podSetAssignments"][0]["flavors"] == {
        "cpu": "portal-default", "memory": "portal-default",
        "nvidia.com/GA100_A100_SXM4_80GB": "gpu-passthrough"}
    assert launcher["spec"]["priorityClassRef"]["name"] == "portal-interactive"
