"""The demo's fleet, tenants, accounts and workloads: deterministic, so loading twice changes
nothing."""

import datetime
import uuid
from dataclasses import dataclass
from decimal import Decimal

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from billing.services import accounts as billing_accounts
from core.models import SimulatedObject
from demo.fleet.simulated import READY_AFTER_ANNOTATION
from inventory.demo_fleet import demo_fleet_details
from inventory.models import DEFAULT_CLUSTER, GPU, Node, NodeState, Rack, Site
from inventory.resource_classes import GPU_MODELS
from tenants.access import services as tenant_services
from tenants.enforcement.services import tenant_reconcile, tenants_reconcile_sweep
from tenants.models import Membership, RoleAssignment, Tenant, Workload
from tenants.quota import services as tenant_quota
from tenants.workloads import services as workloads
from tenants.workloads.kinds.base import LABEL_WORKLOAD_ID
from tenants.workloads.selectors import build_context

from . import billing_data as demo_billing
from .admin_images import load_admin_images
from .clusters import FRANKFURT, clusters_load, tenants_on_their_clusters
from .idle_gpus import load_idle_gpus
from .model_credentials import load_model_credentials
from .queued_jobs import queued_jobs_send
from .quota_requests import COHORT, quota_requests_load

DEMO_NAMESPACE = uuid.UUID("5f1c2a7e-4d1b-4e0a-9c39-2f6a3b8d7e10")


@dataclass(frozen=True)
class DemoAccount:
    username: str
    password: str
    name: str
    role: str


ACCOUNTS = (
    DemoAccount("olivia", "olivia-owner-demo", "Olivia Owner", "tenant owner of Helix Research"),
    DemoAccount("mike", "mike-member-demo", "Mike Member", "tenant member of Nova Inference"),
    DemoAccount("fiona", "fiona-finance-demo", "Fiona Finance", "finance"),
    DemoAccount("adam", "adam-admin-demo", "Adam Admin", "platform admin"),
)

# (model key, nodes, GPUs per node, CPU cores, memory GiB)
NODE_PLAN = (
    ("nvidia-h200", 8, 8, 192, 2048),
    ("nvidia-h100-80gb", 10, 8, 112, 2048),
    ("nvidia-a100-80gb", 10, 8, 128, 1024),
    ("nvidia-l40s", 12, 8, 64, 512),
)
SITES = (("fra1", "Frankfurt 1", "eu-central"), ("ams1", "Amsterdam 1", "eu-west"))
TENANTS = (
    ("helix", "Helix Research", "dedicated", "CC-1001", Decimal("250000.00")),
    ("nova", "Nova Inference", "shared", "CC-2040", Decimal("90000.00")),
    ("atlas", "Atlas Evaluation", "shared", "CC-3300", Decimal("30000.00")),
    ("orbit", "Orbit Fine-tuning", "shared", "CC-4120", Decimal("60000.00")),
)
QUOTAS = {
    "helix": {
        "gpu:nvidia-h200": 32,
        "cpu": 768,
        "memory-gib": 8192,
        "storage-gib": 50000,
        "count:vcluster": 4,
        "count:slurm": 2,
        "count:inference": 2,
        "count:notebook": 4,
    },
    "nova": {
        "gpu:nvidia-h100-80gb": 16,
        "gpu:nvidia-l40s": 24,
        # Shares of the L40S nodes HAMi serves: 2 GPUs' worth of memory and compute.
        "hami:nvidia-l40s:memory-gib": 88,
        "hami:nvidia-l40s:cores": 200,
        "cpu": 256,
        "memory-gib": 2048,
        "storage-gib": 10000,
        "count:inference": 10,
        "count:vcluster": 2,
        "count:notebook": 6,
    },
    "atlas": {
        "mig:nvidia-a100-80gb:1g.10gb": 28,
        "gpu:nvidia-l40s": 8,
        "cpu": 96,
        "memory-gib": 768,
        "storage-gib": 2000,
        "count:vm": 6,
        "count:slurm": 2,
        "count:inference": 2,
        "count:notebook": 4,
    },
    "orbit": {
        "gpu:nvidia-a100-80gb": 24,
        "cpu": 192,
        "memory-gib": 1536,
        "storage-gib": 20000,
        "count:vcluster": 2,
        "count:vm": 4,
        "count:slurm": 1,
    },
}
MEMBERS = {
    "helix": [("olivia", "owner"), ("hana", "member"), ("viktor", "viewer")],
    "nova": [("nora", "owner"), ("mike", "member"), ("olivia", "viewer")],
    "atlas": [("ari", "owner"), ("mike", "viewer")],
    "orbit": [("omar", "owner"), ("olga", "member")],
}
EXTRA_USERS = {
    "hana": "Hana Hoffmann",
    "viktor": "Viktor Vogel",
    "nora": "Nora Nakamura",
    "ari": "Ari Andersson",
    "omar": "Omar Okafor",
    "olga": "Olga Orlova",
}


def _user(username: str, full_name: str, password: str | None):
    user_model = get_user_model()
    first, _, last = full_name.partition(" ")
    user, created = user_model.objects.get_or_create(
        username=username,
        defaults={"first_name": first, "last_name": last, "email": f"{username}@example.com"},
    )
    if created:
        if password:
            user.set_password(password)
        else:
            user.set_unusable_password()
        user.save()
    return user


def _fleet() -> int:
    racks = []
    for slug, name, region in SITES:
        site, _ = Site.objects.get_or_create(slug=slug, defaults={"name": name, "region": region})
        racks += [Rack.objects.get_or_create(site=site, name=f"r{n:02d}")[0] for n in range(1, 6)]
    cluster_of_site = clusters_load()
    number = 0
    created = 0
    numbered: dict[int, Node] = {}
    for model_key, count, per_node, cores, memory in NODE_PLAN:
        model = GPU_MODELS[model_key]
        for i in range(count):
            number += 1
            rack = racks[(number - 1) % len(racks)]
            hostname = f"gpu-{rack.site.slug}-{number:03d}"
            state = NodeState.AVAILABLE
            if number in (7, 23):
                state = NodeState.CORDONED
            elif number == 31:
                state = NodeState.MAINTENANCE
            elif number == 40:
                state = NodeState.VALIDATING
            node, node_created = Node.objects.get_or_create(
                hostname=hostname,
                defaults={
                    "k8s_name": hostname,
                    "cluster_id": cluster_of_site[rack.site.slug],
                    "serial": f"SN{uuid.uuid5(DEMO_NAMESPACE, hostname).hex[:10].upper()}",
                    "rack": rack,
                    "position": 2 + 4 * ((number - 1) // len(racks)),
                    "cpu_cores": cores,
                    "memory_gib": memory,
                    "state": state,
                    "reserved_for": "helix" if model_key == "nvidia-h200" and i < 4 else "",
                },
            )
            created += node_created
            numbered[number] = node
            if node_created:
                GPU.objects.bulk_create(
                    GPU(
                        node=node,
                        index=g,
                        uuid=f"GPU-{uuid.uuid5(DEMO_NAMESPACE, f'{hostname}/{g}')}",
                        model=model_key,
                        memory_gib=model.memory_gib,
                        mig_capable=model.mig_capable,
                        mig_layout=["1g.10gb"] * 7
                        if model_key == "nvidia-a100-80gb" and i < 2
                        else [],
                        health=GPU.Health.DEGRADED
                        if number == 23 and g == 3
                        else GPU.Health.HEALTHY,
                    )
                    for g in range(per_node)
                )
    # NICs, topology, BIOS profiles, health history, and the simulated clusters' objects.
    demo_fleet_details(numbered=numbered)
    return created


# The demo's public key for root's or the VM user's login (its private half was never kept).
DEMO_SSH_KEY = (
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIMgD8uC8AVXeT7ZNENLj3eGCoqOWBy09yW8vJWtBG5Oa"
    " demo@ai-factory"
)


@dataclass(frozen=True)
class DemoWorkload:
    """A workload the demo launches through the services, on which cluster, and where it is
    left: `settled` (its objects dated as if applied long ago and looked at again: ready, or
    failed in the cluster's words, by the time anyone looks), `stopped` (a VM or a notebook
    that ran, then was stopped), or `fresh` (just applied, still coming up: its page follows it
    to ready)."""

    tenant: str
    launched_by: str
    kind: str
    name: str
    spec: dict
    state: str = "settled"
    cluster: str = DEFAULT_CLUSTER


# A model whose name ends in -does-not-exist is one the simulated KServe cannot find. Those on
# Frankfurt's cluster: Helix's (its reserved H200 nodes are there), Nova's H100 endpoints, its
# vCluster and its endpoint still coming up, Atlas's VM and Orbit's; the rest on Amsterdam's,
# the default cluster (its MIG nodes, the gated model's credential, and the L40S nodes and
# queues where Kueue's borrowing plays: whole nodes left for Nova's 70B endpoint).
WORKLOADS = (
    DemoWorkload("nova", "mike", "vcluster", "dev-cluster",
                 {"kubernetes_version": "1.35", "cpu": 4, "memory_gib": 8}, cluster=FRANKFURT),
    DemoWorkload("nova", "mike", "inference", "support-assistant",
                 {"model_uri": "hf://meta-llama/Llama-3.1-8B-Instruct",
                  "gpu": "gpu:nvidia-h100-80gb", "gpus_per_replica": 1, "min_replicas": 1,
                  "max_replicas": 2, "cpu": 8, "memory_gib": 64}, cluster=FRANKFURT),
    DemoWorkload("nova", "mike", "inference", "llama-70b-trial",
                 {"model_uri": "hf://meta-llama/Llama-3.3-70B-Instruct-does-not-exist",
                  "gpu": "gpu:nvidia-h100-80gb", "gpus_per_replica": 4, "min_replicas": 1,
                  "max_replicas": 1, "cpu": 16, "memory_gib": 256}, cluster=FRANKFURT),
    DemoWorkload("nova", "mike", "inference", "search-embeddings",
                 {"model_uri": "hf://intfloat/e5-mistral-7b-instruct", "gpu": "gpu:nvidia-l40s",
                  "gpus_per_replica": 1, "min_replicas": 1, "max_replicas": 1, "cpu": 8,
                  "memory_gib": 48}, state="fresh", cluster=FRANKFURT),
    DemoWorkload("atlas", "ari", "slurm", "eval-slurm",
                 {"workers": 4, "gpu": "mig:nvidia-a100-80gb:1g.10gb", "gpus_per_worker": 1,
                  "cpu_per_worker": 4, "memory_gib_per_worker": 32, "accounting": True,
                  "rest_api": True, "ssh_public_key": DEMO_SSH_KEY}),
    DemoWorkload("atlas", "ari", "vm", "redteam-box",
                 {"image": "ubuntu-2404-nvidia", "cpu": 8, "memory_gib": 32, "disk_gib": 100,
                  "gpu": "gpu:nvidia-l40s", "gpus": 1, "ssh_public_key": DEMO_SSH_KEY},
                 state="stopped", cluster=FRANKFURT),
    DemoWorkload("orbit", "omar", "vm", "notebook",
                 {"image": "rocky-9", "cpu": 16, "memory_gib": 128, "disk_gib": 200,
                  "gpu": "gpu:nvidia-a100-80gb", "gpus": 1, "ssh_public_key": DEMO_SSH_KEY},
                 cluster=FRANKFURT),
    # One endpoint per way of getting a GPU besides whole ones on the shared pool: whole GPUs
    # on a dedicated tenant's reserved nodes, a HAMi share, a MIG instance.
    DemoWorkload("helix", "olivia", "inference", "eval-34b",
                 {"model_uri": "s3://helix-models/34b/step-90000", "gpu": "gpu:nvidia-h200",
                  "gpus_per_replica": 4, "min_replicas": 1, "max_replicas": 2, "cpu": 32,
                  "memory_gib": 256}, cluster=FRANKFURT),
    DemoWorkload("nova", "mike", "inference", "support-chat",
                 {"model_uri": "hf://Qwen/Qwen2.5-7B-Instruct", "gpu": "hami:nvidia-l40s",
                  "gpu_memory_gib": 20, "gpu_cores": 30, "min_replicas": 1, "max_replicas": 2,
                  "cpu": 4, "memory_gib": 32}),
    DemoWorkload("atlas", "ari", "inference", "eval-judge",
                 {"model_uri": "hf://meta-llama/Llama-3.1-8B-Instruct",
                  "gpu": "mig:nvidia-a100-80gb:1g.10gb", "min_replicas": 1, "max_replicas": 3,
                  "cpu": 2, "memory_gib": 16}),
    # A gated model (simulated_kserve.GATED_MODELS), loaded with the tenant's stored token.
    DemoWorkload("nova", "mike", "inference", "llama-3b-gated",
                 {"model_uri": "hf://meta-llama/Llama-3.2-3B-Instruct", "credential": "hf-token",
                  "gpu": "gpu:nvidia-l40s", "gpus_per_replica": 1, "min_replicas": 1,
                  "max_replicas": 1, "cpu": 8, "memory_gib": 32}),
    DemoWorkload("helix", "olivia", "vcluster", "pretrain-cluster",
                 {"kubernetes_version": "1.35", "gpu_scheduling": True, "cpu": 8,
                  "memory_gib": 32}, cluster=FRANKFURT),
    # Notebooks, each with its launcher's home volume: Mike's VS Code without a GPU, stopped
    # (its home kept), then his JupyterLab on a HAMi share, which mounts that home now (one
    # notebook at a time on a ReadWriteOnce home); Ari's JupyterLab on a MIG instance.
    DemoWorkload("nova", "mike", "notebook", "prompt-tools",
                 {"image": "vscode", "cpu": 2, "memory_gib": 8}, state="stopped"),
    DemoWorkload("nova", "mike", "notebook", "mike-lab",
                 {"image": "pytorch-cuda", "gpu": "hami:nvidia-l40s", "gpu_memory_gib": 12,
                  "gpu_cores": 20, "cpu": 4, "memory_gib": 32}),
    DemoWorkload("atlas", "ari", "notebook", "eval-analysis",
                 {"image": "scipy", "gpu": "mig:nvidia-a100-80gb:1g.10gb", "cpu": 4,
                  "memory_gib": 16}),
)


# Launched once the tenants' queues hold the jobs sent straight to them (`queued_jobs_send`), in
# this order, so that Kueue's borrowing and reclaim show on the portal's pages: Atlas's
# benchmark cluster borrows Nova's idle L40S (its own are held by its evaluation sweep); Nova's
# 70B endpoint then needs them back and reclaims one of its workers, which waits in Atlas's
# queue (its timeline says who took the GPUs); Orbit's adapter cluster waits behind Orbit's
# fine-tuning jobs for A100 quota.
QUEUED_WORKLOADS = (
    DemoWorkload("atlas", "ari", "slurm", "bench-slurm",
                 {"workers": 2, "gpu": "gpu:nvidia-l40s", "gpus_per_worker": 2,
                  "cpu_per_worker": 8, "memory_gib_per_worker": 64, "accounting": False,
                  "rest_api": False, "ssh_public_key": DEMO_SSH_KEY}),
    DemoWorkload("nova", "mike", "inference", "chat-70b",
                 {"model_uri": "hf://meta-llama/Llama-3.3-70B-Instruct", "gpu": "gpu:nvidia-l40s",
                  "gpus_per_replica": 8, "min_replicas": 2, "max_replicas": 2, "cpu": 16,
                  "memory_gib": 192}),
    DemoWorkload("orbit", "olga", "slurm", "adapter-slurm",
                 {"workers": 1, "gpu": "gpu:nvidia-a100-80gb", "gpus_per_worker": 8,
                  "cpu_per_worker": 16, "memory_gib_per_worker": 128, "accounting": False,
                  "rest_api": False, "ssh_public_key": DEMO_SSH_KEY}),
)


def _backdate(workload: Workload) -> None:
    """Date the workload's objects on the simulated cluster as if applied long ago (those it
    owns by label, and what the chart or operator made that the kind reads by name), so that
    the next look finds them as the cluster's controllers would have left them by now."""
    # One look first: the simulated controllers make their objects (a Slurm cluster's
    # StatefulSets) when the fleet is read, and a first apply is judged without reading it.
    workloads.workload_observe(workload_id=workload.pk)
    ctx = build_context(workload=workload)
    names = getattr(workload.kind_entry.module, "unowned_objects", None)
    unowned = {(a, k, n) for a, k, n in (names(workload.spec, ctx) if names else ())}
    long_ago = timezone.now() - max(
        datetime.timedelta(minutes=10),
        3 * datetime.timedelta(seconds=settings.FLEET_SIMULATED_READY_SECONDS),
    )
    ids = [
        row.pk
        for row in SimulatedObject.objects.filter(
            cluster=workload.cluster_id, namespace=ctx.namespace
        )
        if ((row.body.get("metadata") or {}).get("labels") or {}).get(LABEL_WORKLOAD_ID)
        == str(workload.pk)
        or (row.api_version, row.kind, row.name) in unowned
    ]
    SimulatedObject.objects.filter(pk__in=ids).update(created_at=long_ago, updated_at=long_ago)


# The demo's endpoint "still coming up" takes this long after the load ends: however long
# loading took, it is still coming up when someone first opens it, then comes up on its own.
COMING_UP_SECONDS = 600


def _workload_rows(workload: Workload):
    """The workload's objects on the simulated cluster (by its label)."""
    return [
        row for row in SimulatedObject.objects.filter(
            cluster=workload.cluster_id, namespace=workload.tenant.namespace
        )
        if ((row.body.get("metadata") or {}).get("labels") or {}).get(LABEL_WORKLOAD_ID)
        == str(workload.pk)
    ]


def _coming_up(workload_ids: list[int]) -> None:
    """Restart the clock of what was just applied at the end of the load, with a controller
    taking COMING_UP_SECONDS (an annotation the simulated fleet reads)."""
    now = timezone.now()
    for workload in Workload.objects.filter(pk__in=workload_ids).select_related("tenant"):
        for row in _workload_rows(workload):
            metadata = dict(row.body.get("metadata") or {})
            metadata["annotations"] = {
                **(metadata.get("annotations") or {}),
                READY_AFTER_ANNOTATION: str(COMING_UP_SECONDS),
            }
            SimulatedObject.objects.filter(pk=row.pk).update(
                body={**row.body, "metadata": metadata}, created_at=now, updated_at=now
            )


def _settle(workload_id: int) -> None:
    """Apply a workload on the simulated fleet and look at it once its objects are old enough
    to be ready (the demo's past workloads)."""
    workloads.workload_reconcile(workload_id=workload_id)
    _backdate(Workload.objects.get(pk=workload_id))
    workloads.workload_observe(workload_id=workload_id)


def _workloads(users: dict, items: tuple[DemoWorkload, ...]) -> list[int]:
    """A few workloads in each state, launched, reconciled and observed through the services
    (the tasks would do the same after commit; here they run at once). Only on the simulated
    fleet: the demo launches nothing on a real cluster. Returns the ids of those launched now
    that are to be still coming up."""
    fresh: list[int] = []
    if settings.FLEET_BACKEND != "simulated":
        return fresh
    for item in items:
        tenant = Tenant.objects.get(slug=item.tenant)
        if Workload.objects.filter(tenant=tenant, name=item.name).exists():
            continue
        workload = workloads.workload_launch(
            tenant=tenant, actor=users[item.launched_by], kind=item.kind, name=item.name,
            spec=item.spec, cluster=item.cluster,
            label=demo_billing.COST_LABELS.get(item.name, ""),
        )
        workloads.workload_reconcile(workload_id=workload.pk)
        if item.state == "fresh":
            fresh.append(workload.pk)
            _coming_up([workload.pk])  # nothing the rest of the load reads finds it ready
            continue
        _backdate(workload)
        workloads.workload_observe(workload_id=workload.pk)
        if item.state == "stopped":
            workloads.workload_power(
                workload_id=workload.pk, actor=users[item.launched_by], action="stop"
            )
            workloads.workload_reconcile(workload_id=workload.pk)
    return fresh


def _queued_workloads(users: dict) -> None:
    """Launch QUEUED_WORKLOADS (those not launched yet) between two passes of the observe
    sweep: the first has the cluster make what the workloads already launched still lack (the
    replica of the endpoint coming up), so that Kueue admits it before these; after them, a
    workload Kueue preempted while the next one was launched says so on its timeline, and each
    one waiting says where it stands in its queue; then their tenants' quota shows what Kueue
    admitted and what they borrow."""
    if all(Workload.objects.filter(tenant__slug=item.tenant, name=item.name).exists()
           for item in QUEUED_WORKLOADS):
        return
    workloads.workloads_observe_sweep(cluster=DEFAULT_CLUSTER)
    _workloads(users, QUEUED_WORKLOADS)
    workloads.workloads_observe_sweep(cluster=DEFAULT_CLUSTER)
    for tenant in Tenant.objects.filter(slug__in={item.tenant for item in QUEUED_WORKLOADS}):
        tenant_reconcile(tenant_id=tenant.pk)


@transaction.atomic
def load_demo() -> list[DemoAccount]:
    """Create the demo fleet, tenants, members, quotas, accounts and workloads (idempotent)."""
    _fleet()
    accounts = {a.username: _user(a.username, a.name, a.password) for a in ACCOUNTS}
    users = accounts | {u: _user(u, n, None) for u, n in EXTRA_USERS.items()}
    for slug, name, isolation, cost_center, budget in TENANTS:
        tenant = Tenant.objects.filter(slug=slug).first()
        if tenant is None:
            tenant = tenant_services.tenant_create(
                actor=None, slug=slug, name=name, isolation=isolation, cost_center=cost_center
            )
            billing_accounts.billing_account_update(
                actor=None, tenant=tenant, monthly_budget=budget
            )
        for username, role in MEMBERS[slug]:
            if not Membership.objects.filter(tenant=tenant, user=users[username]).exists():
                tenant_services.membership_set(
                    actor=None, tenant=tenant, user=users[username], role=role
                )
        # A demo database of an earlier version gets the lines (and the room) added since.
        held = dict(tenant.quotas.filter(cluster=None).values_list("resource", "limit"))
        for resource, limit in QUOTAS[slug].items():
            if held.get(resource, -1) < limit:
                tenant_quota.quota_set(actor=None, tenant=tenant, resource=resource, limit=limit)
    tenant_services.role_grant(actor=None, user=users["fiona"], role=RoleAssignment.Role.FINANCE)
    tenant_services.role_grant(
        actor=None, user=users["adam"], role=RoleAssignment.Role.PLATFORM_ADMIN
    )
    quota_requests_load(users)
    load_admin_images()
    load_model_credentials(users)
    fresh = _workloads(users, WORKLOADS)
    demo_billing.load_billing_demo(users=users, apply=_settle)
    load_idle_gpus()
    _coming_up(fresh)  # from the end of the load on
    # The periodic sweep's pass, once everything runs: what each tenant's quota objects on
    # each cluster count now (the pages show it beside what the workloads hold); at once, for
    # what the rest of the load reads, and again after it commits.
    tenants_on_their_clusters()
    tenants_reconcile_sweep()
    # Once the tenants' namespaces and queues are on the cluster.
    queued_jobs_send(cohort=COHORT[1])
    _queued_workloads(users)
    tenants_on_their_clusters()  # what the queued workloads changed, on every cluster
    return list(ACCOUNTS)
