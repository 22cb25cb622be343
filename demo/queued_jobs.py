"""The demo's jobs that go through Kueue without the portal: pods a tenant sends straight to
its LocalQueue, so that the demo shows a tenant borrowing from its cohort and a job waiting in
the queue in Kueue's words (the portal's own launches stay within each tenant's quota)."""

import datetime

from django.conf import settings
from django.utils import timezone

from core.fleet import get_gateway
from core.models import SimulatedObject
from demo.fleet.simulated_clock import iso
from inventory.models import DEFAULT_CLUSTER
from inventory.resource_classes import GPU_MODELS
from tenants.enforcement.services import tenant_reconcile
from tenants.models import Tenant

# The cluster the jobs are sent to: where `tenant_reconcile` keeps the tenants' queues (the
# default cluster, Amsterdam's in the demo; demo.clusters), and where Kueue's borrowing plays.
CLUSTER = DEFAULT_CLUSTER
# Jobs tenants send straight to their LocalQueue (a training pod from a notebook, or synced
# from a vCluster), as (tenant, name, pods, GPU model, GPUs each): Atlas's sweep borrows what
# Nova leaves idle of the L40S through the cohort; Orbit's fourth fine-tuning job waits in the
# queue, in Kueue's words, for A100 quota nobody in the cohort has left.
QUEUED_JOBS = (
    ("atlas", "eval-sweep", 3, "nvidia-l40s", 4),
    ("orbit", "lora-finetune", 4, "nvidia-a100-80gb", 8),
)
# How long ago the jobs were sent: before the portal's launches that queue behind them or
# reclaim from them (Kueue orders a queue, and picks whom to preempt, by age).
SENT_AGO = datetime.timedelta(hours=1)


def queued_jobs_send(*, cohort: tuple[str, ...]) -> None:
    """Send the queued jobs' pods to their tenants' queues (those not sent yet). The `cohort`'s
    members are reconciled first, at once (the sweep's reconciles run after the load commits),
    so that Kueue finds their queues; the jobs' tenants again after, so that their quota shows
    what Kueue admitted and what they borrow."""
    if settings.FLEET_BACKEND != "simulated":
        return
    missing = []
    for slug, name, count, model, gpus in QUEUED_JOBS:
        tenant = Tenant.objects.get(slug=slug)
        there = set(SimulatedObject.objects.filter(cluster=CLUSTER, kind="Pod",
                                                   namespace=tenant.namespace)
                    .values_list("name", flat=True))
        missing += [{
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"{name}-{n}", "namespace": tenant.namespace, "labels": {
                "kueue.x-k8s.io/queue-name": "default",
                "kueue.x-k8s.io/priority-class": "portal-batch"}},
            "spec": {
                "nodeSelector": {"nvidia.com/gpu.product": GPU_MODELS[model].product_label},
                "containers": [{"name": "main", "image": "nvcr.io/nvidia/pytorch:25.01-py3",
                                "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}],
            },
        } for n in range(count) if f"{name}-{n}" not in there]
    if not missing:
        return
    members = Tenant.objects.filter(slug__in=cohort).order_by("pk")
    for tenant in members:
        tenant_reconcile(tenant_id=tenant.pk)
    get_gateway(CLUSTER).apply(manifests=missing)
    _sent_earlier(missing)
    for tenant in members.filter(slug__in={slug for slug, *_ in QUEUED_JOBS}):
        tenant_reconcile(tenant_id=tenant.pk)


def _sent_earlier(pods: list[dict]) -> None:
    """Date the jobs' new pods SENT_AGO back, before Kueue makes their Workloads (which take
    their pod's age)."""
    at = timezone.now() - SENT_AGO
    for row in SimulatedObject.objects.filter(
        cluster=CLUSTER, kind="Pod", name__in={p["metadata"]["name"] for p in pods},
        namespace__in={p["metadata"]["namespace"] for p in pods},
    ):
        metadata = {**row.body["metadata"], "creationTimestamp": iso(at)}
        SimulatedObject.objects.filter(pk=row.pk).update(
            body={**row.body, "metadata": metadata}, created_at=at, updated_at=at)
