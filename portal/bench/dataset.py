"""The fleet-scale data set of the benchmark, written straight into PostgreSQL with COPY.

Deterministic: the same scale, seed and anchor month give the same rows (ids included). At
scale 1 it holds what issue 13 measures a fleet at: 2,000 nodes with 16,000 GPUs in 4 sites,
2,000 tenants with 5,000 users, 20,000 workloads with their event history, 10,000 quota
requests (400 awaiting review), 12 months of invoices and one month of hourly usage for 10,000
workloads (about 7 million rows). Every count scales linearly, with a minimum of 1.

Rows go in with COPY, not through the services: no audit events, no cluster follow-ups, and
issued invoices written already issued (the models refuse to change one afterwards). This is
test data for measuring reads; it never runs against a served portal's database (the command
refuses a non-empty database).
"""

from __future__ import annotations

import datetime
import json
import random
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.color import no_style
from django.db import connection, models, transaction
from django.utils import timezone

from billing.models import (
    BillingAccount,
    CreditNote,
    DocumentSequence,
    Invoice,
    InvoiceLine,
    MeteringWindow,
    Rate,
    UsageRecord,
)
from inventory import resource_classes
from inventory.models import GPU, NIC, HealthEvent, Node, NodeState, Rack, Site
from tenants.models import (
    Membership,
    Quota,
    QuotaRequest,
    QuotaRequestLine,
    RoleAssignment,
    Tenant,
    Workload,
    WorkloadEvent,
)
from tenants.workloads.kinds.base import GpuOffer, LaunchContext
from tenants.workloads.models import VmImage
from tenants.workloads.registry import KINDS

FULL_SCALE = {
    "nodes": 2000,
    "tenants": 2000,
    "users": 5000,
    "workloads": 20000,
    "quota_requests": 10000,
    "awaiting_review": 400,
    "metered_workloads": 10000,
    "health_events": 600,
}
GPUS_PER_NODE = 8
SITE_COUNT = 4
NODES_PER_RACK = 10
INVOICE_MONTHS = 12
# Every 50th workload belongs to the bench owner's tenant, so its pages are full and paginated.
BENCH_TENANT_SHARE = 50

BENCH_OWNER = "bench-owner"
BENCH_ADMIN = "bench-admin"
BENCH_FINANCE = "bench-finance"
BENCH_TENANT = "team-0001"

# (model key, share of nodes, CPU cores, memory GiB, price per GPU-hour)
NODE_PLAN = (
    ("nvidia-h200", 0.25, 192, 2048, Decimal("4.20")),
    ("nvidia-h100-80gb", 0.30, 112, 2048, Decimal("3.10")),
    ("nvidia-a100-80gb", 0.25, 128, 1024, Decimal("1.90")),
    ("nvidia-l40s", 0.15, 64, 512, Decimal("0.95")),
    ("nvidia-rtx-4000-ada", 0.05, 32, 256, Decimal("0.35")),
)
SITES = (
    ("fra1", "Frankfurt 1", "eu-central"),
    ("ams1", "Amsterdam 1", "eu-west"),
    ("dub1", "Dublin 1", "eu-west"),
    ("par1", "Paris 1", "eu-west"),
)
WORDS = (
    "Helix", "Nova", "Atlas", "Orbit", "Quasar", "Vertex", "Lumen", "Cobalt", "Aurora",
    "Zenith", "Photon", "Delta", "Sigma", "Kepler", "Tesla", "Vector", "Pulsar", "Nimbus",
)
FIELDS = ("Research", "Inference", "Evaluation", "Fine-tuning", "Vision", "Speech", "Search",
          "Robotics", "Pretraining", "Analytics")
FIRST = ("Ada", "Ben", "Chloe", "Dev", "Elif", "Finn", "Greta", "Hugo", "Ines", "Jon", "Kira",
         "Liam", "Mara", "Nils", "Olga", "Pia", "Raj", "Sara", "Tom", "Uma", "Vera", "Yusuf")
LAST = ("Adler", "Berg", "Costa", "Dias", "Eder", "Fischer", "Garcia", "Horvat", "Ivanova",
        "Jansen", "Kowalski", "Larsen", "Meyer", "Novak", "Okafor", "Petrov", "Quinn", "Rossi",
        "Schmidt", "Tanaka", "Ueda", "Weber")
JUSTIFICATIONS = (
    "Second vLLM replica for the support assistant: p95 latency is over target at peak.",
    "Nightly evaluation sweep over 40 checkpoints; small slices are enough.",
    "LoRA fine-tuning backlog of 30 customer adapters.",
    "Pre-training run of the 34B model needs one more node for six weeks.",
    "Embedding service for the new search index.",
    "Red-team tooling needs two more VMs for the quarter.",
)
WORKLOAD_STATES = (  # (status, weight)
    ("ready", 55), ("deleted", 20), ("failed", 5), ("degraded", 3), ("provisioning", 7),
    ("pending", 6), ("deleting", 4),
)
QUOTA_DECIDED = (("applied", 60), ("rejected", 20), ("withdrawn", 10), ("expired", 10))
DEMO_SSH_KEY = (
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIMgD8uC8AVXeT7ZNENLj3eGCoqOWBy09yW8vJWtBG5Oa"
    " bench@ai-factory"
)
VM_IMAGES = (
    ("ubuntu-2404-nvidia", "Ubuntu 24.04 LTS with NVIDIA driver 580",
     "registry.ai-factory.example/containerdisks/ubuntu-nvidia:24.04-580.95.05", 40, "ubuntu"),
    ("rocky-9", "Rocky Linux 9", "registry.ai-factory.example/containerdisks/rocky:9.6", 20,
     "rocky"),
)
# What each kind is launched with (validated by the kind before use), by GPU model.
SPEC_TEMPLATES: dict[str, Callable[[str], dict]] = {
    "vcluster": lambda model: {"kubernetes_version": "1.35", "gpu_scheduling": True, "cpu": 4,
                               "memory_gib": 16},
    "inference": lambda model: {"model_uri": "hf://meta-llama/Llama-3.1-8B-Instruct",
                                "gpu": f"gpu:{model}", "gpus_per_replica": 1,
                                "min_replicas": 1, "max_replicas": 2, "cpu": 8,
                                "memory_gib": 64},
    "vm": lambda model: {"image": "ubuntu-2404-nvidia", "cpu": 8, "memory_gib": 32,
                         "disk_gib": 100, "gpu": f"gpu:{model}", "gpus": 1,
                         "ssh_public_key": DEMO_SSH_KEY},
    "slurm": lambda model: {"workers": 2, "gpu": f"gpu:{model}", "gpus_per_worker": 1,
                            "cpu_per_worker": 8, "memory_gib_per_worker": 64,
                            "accounting": True, "rest_api": True,
                            "ssh_public_key": DEMO_SSH_KEY},
}
MONEY_CENT = Decimal("0.01")


@dataclass(frozen=True)
class Sizes:
    nodes: int
    tenants: int
    users: int
    workloads: int
    quota_requests: int
    awaiting_review: int
    metered_workloads: int
    health_events: int

    @classmethod
    def at(cls, scale: float) -> Sizes:
        sizes = {name: max(1, round(full * scale)) for name, full in FULL_SCALE.items()}
        # Three bench accounts besides one owner per tenant.
        sizes["users"] = max(sizes["users"], sizes["tenants"] + 3)
        sizes["awaiting_review"] = min(sizes["awaiting_review"], sizes["quota_requests"])
        sizes["metered_workloads"] = min(sizes["metered_workloads"], sizes["workloads"])
        return cls(**sizes)


def default_anchor() -> datetime.datetime:
    """The first instant of the current UTC month: invoices cover the 12 months before it,
    usage the month before it."""
    today = datetime.datetime.now(tz=datetime.UTC)
    return today.replace(day=1, hour=0, minute=0, second=0, microsecond=0)


def database_is_empty() -> bool:
    watched = (Node, Tenant, Workload, UsageRecord, Invoice, get_user_model())
    return not any(model.objects.exists() for model in watched)


# --- COPY ---------------------------------------------------------------------------------------


def _column_defaults(model: type[models.Model]) -> list[tuple[str, Any]]:
    """(column, default) for every concrete column; `_REQUIRED` where a row must say."""
    columns = []
    for field in model._meta.concrete_fields:
        if field.has_default() and field.default is timezone.now:
            default = _NOW  # the anchor, so that the rows stay deterministic
        elif field.has_default():
            default = field.get_default()
        elif field.null:
            default = None
        elif getattr(field, "auto_now", False) or getattr(field, "auto_now_add", False):
            default = _NOW
        elif isinstance(field, models.CharField | models.TextField) and field.blank:
            default = ""
        else:
            default = _REQUIRED
        if isinstance(field, models.JSONField) and default is not _REQUIRED:
            default = json.dumps(default)
        columns.append((field.column, field.attname, default, isinstance(field, models.JSONField)))
    return columns


_REQUIRED = object()
_NOW = datetime.datetime(2000, 1, 1, tzinfo=datetime.UTC)  # replaced by the anchor per run


def copy_rows(model: type[models.Model], rows: Iterable[dict], *, now: datetime.datetime) -> int:
    """COPY `rows` (dicts by attname; unnamed columns take the field's default) into `model`."""
    columns = _column_defaults(model)
    names = ", ".join(connection.ops.quote_name(column) for column, *_ in columns)
    count = 0
    with connection.cursor() as cursor:
        raw = cursor.cursor
        with raw.copy(f"COPY {connection.ops.quote_name(model._meta.db_table)} ({names}) "
                      "FROM STDIN") as copy:
            for row in rows:
                values = []
                for _column, attname, default, is_json in columns:
                    if attname in row:
                        value = row[attname]
                        if is_json and value is not None:
                            value = json.dumps(value)
                    elif default is _REQUIRED:
                        raise KeyError(f"{model.__name__}.{attname} needs a value")
                    elif default is _NOW:
                        value = now
                    else:
                        value = default
                    values.append(value)
                copy.write_row(values)
                count += 1
    return count


def _reset_sequences(model_list: list[type[models.Model]]) -> None:
    with connection.cursor() as cursor:
        for statement in connection.ops.sequence_reset_sql(no_style(), model_list):
            cursor.execute(statement)


def _weighted(rng: random.Random, choices: tuple[tuple[str, int], ...]) -> str:
    values, weights = zip(*choices, strict=True)
    return rng.choices(values, weights=weights)[0]


def _add_months(moment: datetime.datetime, months: int) -> datetime.datetime:
    month = moment.month - 1 + months
    return moment.replace(year=moment.year + month // 12, month=month % 12 + 1, day=1)


# --- the generator ------------------------------------------------------------------------------


class Generator:
    """Writes the data set table by table, keeping only the ids and keys later tables need."""

    def __init__(self, *, scale: float, seed: int, anchor: datetime.datetime,
                 log: Callable[[str], None]) -> None:
        self.scale, self.seed, self.anchor, self.log = scale, seed, anchor, log
        self.sizes = Sizes.at(scale)
        self.rng = random.Random(seed)  # noqa: S311 - test data, reproducible by design
        self.namespace = uuid.UUID(int=seed)
        self.timings: dict[str, float] = {}
        self.counts: dict[str, int] = {}

    def _step(self, name: str, write: Callable[[], int]) -> None:
        started = time.perf_counter()
        self.counts[name] = write()
        self.timings[name] = round(time.perf_counter() - started, 2)
        self.log(f"  {name:<22} {self.counts[name]:>10,} rows  {self.timings[name]:>7.2f} s")

    def _copy(self, model, rows) -> int:
        return copy_rows(model, rows, now=self.anchor)

    @transaction.atomic
    def run(self) -> dict:
        started = time.perf_counter()
        self._step("sites and racks", self.sites_and_racks)
        self._step("nodes", self.nodes)
        self._step("gpus", self.gpus)
        self._step("nics", self.nics)
        self._step("health events", self.health_events)
        self._step("users", self.users)
        self._step("tenants", self.tenants)
        self._step("memberships", self.memberships)
        self._step("roles", self.roles)
        self._step("quotas", self.quotas)
        self._step("billing accounts", self.billing_accounts)
        self._step("vm images", self.vm_images)
        self._step("workloads", self.workloads)
        self._step("workload events", self.workload_events)
        self._step("quota requests", self.quota_requests)
        self._step("quota request lines", self.quota_request_lines)
        self._step("rates", self.rates)
        self._step("invoices", self.invoices)
        self._step("invoice lines", self.invoice_lines)
        self._step("credit notes", self.credit_notes)
        self._step("document sequences", self.document_sequences)
        self._step("metering windows", self.metering_windows)
        self._step("usage records", self.usage_records)
        _reset_sequences([
            Site, Rack, Node, GPU, NIC, HealthEvent, get_user_model(), Tenant, Membership,
            RoleAssignment, Quota, BillingAccount, VmImage, Workload, WorkloadEvent,
            QuotaRequest, QuotaRequestLine, Rate, Invoice, InvoiceLine, CreditNote,
            DocumentSequence,
            MeteringWindow, UsageRecord,
        ])
        return {
            "scale": self.scale,
            "seed": self.seed,
            "anchor": self.anchor.isoformat(),
            "rows": self.counts,
            "seconds": self.timings,
            "total_seconds": round(time.perf_counter() - started, 2),
        }

    # --- inventory ------------------------------------------------------------------------------

    def sites_and_racks(self) -> int:
        self.rack_count = max(SITE_COUNT, -(-self.sizes.nodes // NODES_PER_RACK))
        self._copy(Site, ({"id": i + 1, "slug": slug, "name": name, "region": region}
                          for i, (slug, name, region) in enumerate(SITES)))
        self.rack_site = {r + 1: r % SITE_COUNT + 1 for r in range(self.rack_count)}
        return SITE_COUNT + self._copy(Rack, (
            {"id": r, "site_id": site, "name": f"r{(r - 1) // SITE_COUNT + 1:03d}",
             "row": f"row-{(r - 1) // (SITE_COUNT * 10) + 1}"}
            for r, site in self.rack_site.items()
        ))

    def _node_model(self, n: int) -> tuple[str, int, int, Decimal]:
        position = (n * 0.6180339887) % 1.0  # spread the models evenly over the racks
        for model, share, cores, memory, price in NODE_PLAN:
            if position < share:
                return model, cores, memory, price
            position -= share
        model, _, cores, memory, price = NODE_PLAN[-1]
        return model, cores, memory, price

    def nodes(self) -> int:
        rng = self.rng
        self.node_models: dict[int, str] = {}
        self.node_hostnames: dict[int, str] = {}
        rows = []
        for n in range(self.sizes.nodes):
            node_id = n + 1
            model_key, cores, memory, _ = self._node_model(n)
            model = resource_classes.GPU_MODELS[model_key]
            rack = n // NODES_PER_RACK + 1
            site_slug = SITES[self.rack_site[rack] - 1][0]
            hostname = f"gpu-{site_slug}-{node_id:04d}"
            roll = rng.random()
            state = (NodeState.AVAILABLE if roll < 0.9 else NodeState.CORDONED if roll < 0.94
                     else NodeState.MAINTENANCE if roll < 0.97 else NodeState.DRAINING
                     if roll < 0.98 else NodeState.VALIDATING)
            mig = model.mig_capable and n % 7 == 0
            self.node_models[node_id] = model_key
            self.node_hostnames[node_id] = hostname
            rows.append({
                "id": node_id, "hostname": hostname, "k8s_name": hostname,
                "serial": f"SN{uuid.uuid5(self.namespace, hostname).hex[:12].upper()}",
                "bmc_address": f"10.{self.rack_site[rack]}.{n // 250}.{n % 250 + 1}",
                "rack_id": rack, "position": 1 + 4 * (n % NODES_PER_RACK), "height_units": 4,
                "role": Node.Role.GPU_WORKER, "state": state,
                "state_changed_at": self.anchor - datetime.timedelta(days=rng.randint(1, 300)),
                "cpu_cores": cores, "memory_gib": memory,
                "k8s_last_seen_at": self.anchor, "k8s_ready": state != NodeState.MAINTENANCE,
                "k8s_unschedulable": state != NodeState.AVAILABLE,
                "k8s_labels": {
                    resource_classes.GPU_PRODUCT_LABEL: model.product_label,
                    "nvidia.com/gpu.count": str(GPUS_PER_NODE),
                    "topology.kubernetes.io/zone": site_slug,
                },
                "k8s_capacity": {"cpu": str(cores), "memory": f"{memory}Gi",
                                 resource_classes.GPU_RESOURCE: str(GPUS_PER_NODE)},
                "k8s_conditions": [{"type": "Ready", "status": "True"}],
                "gpus_in_use": rng.randint(0, GPUS_PER_NODE),
                "gpu_sharing": "mig" if mig else "whole",
                "mig_in_use": {"1g.10gb": rng.randint(0, 7)} if mig else {},
                "created_at": self.anchor - datetime.timedelta(days=400 - n % 300),
            })
        self.mig_nodes = {row["id"] for row in rows if row["gpu_sharing"] == "mig"}
        return self._copy(Node, rows)

    def gpus(self) -> int:
        def rows() -> Iterator[dict]:
            for node_id, model_key in self.node_models.items():
                model = resource_classes.GPU_MODELS[model_key]
                hostname = self.node_hostnames[node_id]
                for index in range(GPUS_PER_NODE):
                    gpu_id = (node_id - 1) * GPUS_PER_NODE + index + 1
                    yield {
                        "id": gpu_id, "node_id": node_id, "index": index,
                        "uuid": f"GPU-{uuid.uuid5(self.namespace, f'{hostname}/{index}')}",
                        "model": model_key, "memory_gib": model.memory_gib,
                        "pci_bus_id": f"0000:{0x18 + index * 0x10:02x}:00.0",
                        "mig_capable": model.mig_capable,
                        "mig_layout": ["1g.10gb"] * 7 if node_id in self.mig_nodes else [],
                        "health": "degraded" if gpu_id % 997 == 0 else "healthy",
                        "nvlink_domain": f"nvl-{hostname}", "numa_node": index // 4,
                    }
        return self._copy(GPU, rows())

    def nics(self) -> int:
        def rows() -> Iterator[dict]:
            for node_id in self.node_models:
                yield {"id": 2 * node_id - 1, "node_id": node_id, "name": "eno1",
                       "kind": "ethernet", "mac_address": f"02:00:00:{node_id >> 8 & 255:02x}:"
                       f"{node_id & 255:02x}:01", "link_speed_gbps": 100, "fabric": "storage"}
                yield {"id": 2 * node_id, "node_id": node_id, "name": "mlx5_0",
                       "kind": "infiniband", "ib_guid": f"0002:c903:00{node_id >> 8 & 255:02x}:"
                       f"{node_id & 255:02x}00", "link_speed_gbps": 400,
                       "fabric": "ib-compute", "rail": 0}
        return self._copy(NIC, rows())

    def health_events(self) -> int:
        rng = self.rng
        rows = []
        kinds = [k for k, _ in HealthEvent.Kind.choices if k != "manual"]
        nodes = list(self.node_models)
        for e in range(self.sizes.health_events):
            node_id = nodes[(e * 7919) % len(nodes)]
            opened = self.anchor - datetime.timedelta(hours=rng.randint(1, 24 * 180))
            # One open event per node at most (the constraint); the rest are resolved.
            still_open = e < len(nodes) and e % 5 == 0
            rows.append({
                "id": e + 1, "node_id": node_id,
                "gpu_id": (node_id - 1) * GPUS_PER_NODE + e % GPUS_PER_NODE + 1,
                "kind": kinds[e % len(kinds)], "subject": f"gpu{e % GPUS_PER_NODE}",
                "severity": ("info", "warning", "critical")[e % 3], "source": "dcgm",
                "value": float(e % 100), "detail": "Seen by the DCGM exporter.",
                "opened_at": opened, "last_seen_at": opened + datetime.timedelta(minutes=30),
                "resolved_at": None if still_open else opened + datetime.timedelta(hours=2),
                "resolution": "" if still_open else "GPU reset; counters cleared.",
                "notified_tenants": [],
            })
        return self._copy(HealthEvent, rows)

    # --- people and tenants ---------------------------------------------------------------------

    def users(self) -> int:
        def rows() -> Iterator[dict]:
            for u in range(self.sizes.users):
                username = ((BENCH_OWNER, BENCH_ADMIN, BENCH_FINANCE)[u] if u < 3
                            else f"user{u:05d}")
                yield {
                    "id": u + 1, "username": username,
                    # Unusable: the bench signs in through the session engine, never a password.
                    "password": f"!bench-{u}",
                    "first_name": FIRST[u % len(FIRST)], "last_name": LAST[u * 7 % len(LAST)],
                    "email": f"{username}@example.com", "is_superuser": False,
                    "is_staff": False, "is_active": True,
                    "date_joined": self.anchor - datetime.timedelta(days=500 - u % 400),
                }
        return self._copy(get_user_model(), rows())

    def tenants(self) -> int:
        rng = self.rng
        self.tenant_slugs: dict[int, str] = {}
        self.tenant_isolation: dict[int, str] = {}
        self.tenant_model: dict[int, str] = {}
        self.tenant_names: dict[int, str] = {}
        rows = []
        for t in range(self.sizes.tenants):
            tenant_id = t + 1
            slug = f"team-{tenant_id:04d}"
            isolation = "dedicated" if t % 5 == 1 else "shared"
            self.tenant_slugs[tenant_id] = slug
            self.tenant_isolation[tenant_id] = isolation
            self.tenant_model[tenant_id] = NODE_PLAN[t % 4][0]
            self.tenant_names[tenant_id] = (
                f"{WORDS[t % len(WORDS)]} {FIELDS[t // len(WORDS) % len(FIELDS)]} {tenant_id}")
            rows.append({
                "id": tenant_id, "slug": slug, "name": self.tenant_names[tenant_id],
                "cost_center": f"CC-{1000 + tenant_id}", "isolation": isolation,
                "status": "suspended" if t % 97 == 96 else "active",
                "cohort": f"pool-{t % 20}" if isolation == "shared" and t % 3 == 0 else "",
                "created_at": self.anchor - datetime.timedelta(days=rng.randint(30, 700)),
                "desired_version": 3, "applied_version": 3,
                "applied_at": self.anchor - datetime.timedelta(days=1),
            })
        return self._copy(Tenant, rows)

    def memberships(self) -> int:
        tenants = self.sizes.tenants
        self.tenant_owner: dict[int, int] = {}
        self.tenant_members: dict[int, list[int]] = {t: [] for t in self.tenant_slugs}
        rows = []
        roles = ("member", "member", "viewer")

        def add(user_id: int, tenant_id: int, role: str) -> None:
            rows.append({"id": len(rows) + 1, "user_id": user_id, "tenant_id": tenant_id,
                         "role": role, "source": "keycloak",
                         "created_at": self.anchor - datetime.timedelta(days=30)})
            self.tenant_members[tenant_id].append(user_id)
            if role == "owner":
                self.tenant_owner[tenant_id] = user_id

        add(1, 1, "owner")  # the bench owner owns the first tenant
        for u in range(3, self.sizes.users):
            user_id = u + 1
            tenant_id = (u - 2) % tenants + 1
            first = tenant_id not in self.tenant_owner
            add(user_id, tenant_id, "owner" if first else roles[u % 3])
            if u % 3 == 0 and tenants > 1:
                other = (tenant_id + 7) % tenants + 1
                if other != tenant_id and user_id not in self.tenant_members[other]:
                    add(user_id, other, "member")
        return self._copy(Membership, rows)

    def roles(self) -> int:
        rows = [{"id": 1, "user_id": 2, "role": "platform_admin", "source": "keycloak"},
                {"id": 2, "user_id": 3, "role": "finance", "source": "keycloak"}]
        return self._copy(RoleAssignment, rows)

    def _tenant_quota(self, tenant_id: int) -> dict[str, int]:
        model = self.tenant_model[tenant_id]
        quota = {f"gpu:{model}": 16 + 8 * (tenant_id % 4), "cpu": 512, "memory-gib": 4096,
                 "storage-gib": 20000}
        quota |= {f"count:{kind}": 10 for kind in KINDS}
        if self.tenant_isolation[tenant_id] == "shared" and model == "nvidia-a100-80gb":
            quota["mig:nvidia-a100-80gb:1g.10gb"] = 14
        return quota

    def quotas(self) -> int:
        rows = []
        for tenant_id in self.tenant_slugs:
            for resource, limit in self._tenant_quota(tenant_id).items():
                rows.append({"id": len(rows) + 1, "tenant_id": tenant_id, "resource": resource,
                             "limit": limit, "in_use": limit // 3,
                             "updated_at": self.anchor - datetime.timedelta(days=10)})
        return self._copy(Quota, rows)

    def billing_accounts(self) -> int:
        return self._copy(BillingAccount, (
            {"id": t, "tenant_id": t, "monthly_budget": Decimal(10000 * (1 + t % 25)),
             "discount_percent": Decimal("5.00") if t % 10 == 0 else Decimal("0"),
             "updated_at": self.anchor}
            for t in self.tenant_slugs
        ))

    def vm_images(self) -> int:
        return self._copy(VmImage, (
            {"id": i + 1, "key": key, "label": label, "container_disk": disk,
             "min_disk_gib": min_disk, "default_user": user, "active": True}
            for i, (key, label, disk, min_disk, user) in enumerate(VM_IMAGES)
        ))

    # --- workloads ------------------------------------------------------------------------------

    def _clean_spec(self, kind: str, model: str) -> tuple[dict, dict]:
        """The spec as the kind validates it, and what it holds (computed once per pair)."""
        cache = self.__dict__.setdefault("_specs", {})
        if (kind, model) not in cache:
            module = KINDS[kind].module
            gpu = f"gpu:{model}"
            ctx = LaunchContext(
                isolation="shared",
                quota={gpu: 64, "cpu": 1024, "memory-gib": 8192, "storage-gib": 50000}
                | {f"count:{k}": 100 for k in KINDS},
                gpu_offers=(GpuOffer(resource=gpu, label=gpu, max_per_node=GPUS_PER_NODE),),
                catalog={"vm_images": {key: {"label": label, "container_disk": disk,
                                             "min_disk_gib": min_disk, "default_user": user}
                                       for key, label, disk, min_disk, user in VM_IMAGES}},
            )
            spec = module.validate(SPEC_TEMPLATES[kind](model), ctx)
            cache[(kind, model)] = (spec, module.demand(spec))
        return cache[(kind, model)]

    def workloads(self) -> int:
        rng = self.rng
        tenants = self.sizes.tenants
        kinds = list(KINDS)
        self.workload_rows: list[tuple[int, int, str, dict, datetime.datetime, str]] = []
        rows = []
        for w in range(self.sizes.workloads):
            workload_id = w + 1
            tenant_id = 1 if w % BENCH_TENANT_SHARE == 0 else w % tenants + 1
            kind = kinds[w % len(kinds)]
            status = _weighted(rng, WORKLOAD_STATES)
            spec, demand = self._clean_spec(kind, self.tenant_model[tenant_id])
            created = self.anchor - datetime.timedelta(minutes=rng.randint(60, 60 * 24 * 300))
            members = self.tenant_members[tenant_id]
            launched_by = members[w % len(members)]
            ready_at = (created + datetime.timedelta(minutes=4)
                        if status in ("ready", "degraded", "deleting", "deleted") else None)
            rows.append({
                "id": workload_id, "tenant_id": tenant_id, "kind": kind,
                "name": f"{kind}-{workload_id:05d}", "launched_by_id": launched_by,
                "spec": spec, "demand": demand, "status": status,
                "status_reason": "ModelNotFound" if status == "failed" else "",
                "status_message": "The model could not be downloaded." if status == "failed"
                else "",
                "observed": {"conditions": [{"type": "Ready", "status":
                                             "True" if status == "ready" else "False"}]},
                "observed_at": self.anchor - datetime.timedelta(minutes=1),
                "created_at": created, "ready_at": ready_at,
                "deleted_at": created + datetime.timedelta(days=3) if status == "deleted"
                else None,
                "desired_version": 2, "applied_version": 2 if status != "pending" else 1,
                "applied_at": created + datetime.timedelta(minutes=1),
            })
            self.workload_rows.append((workload_id, tenant_id, status, demand, created,
                                       launched_by))
        return self._copy(Workload, rows)

    def workload_events(self) -> int:
        def rows() -> Iterator[dict]:
            event_id = 0
            for workload_id, _, status, demand, created, actor in self.workload_rows:
                steps = [("launched", "", "pending", actor, demand)]
                if status != "pending":
                    steps.append(("applied", "", "", None, demand))
                    steps.append(("transition", "pending", "provisioning", None, demand))
                if status in ("ready", "degraded", "deleting", "deleted"):
                    steps.append(("transition", "provisioning", "ready", None, demand))
                if status == "degraded":
                    steps.append(("transition", "ready", "degraded", None, demand))
                if status == "failed":
                    steps.append(("error", "", "", None, demand))
                    steps.append(("transition", "provisioning", "failed", None, demand))
                if status in ("deleting", "deleted"):
                    steps.append(("delete", "", "", actor, demand))
                    steps.append(("transition", "ready", "deleting", None, demand))
                if status == "deleted":
                    steps.append(("transition", "deleting", "deleted", None, {}))
                for position, (kind, source, target, who, held) in enumerate(steps):
                    event_id += 1
                    yield {
                        "id": event_id, "workload_id": workload_id,
                        "created_at": created + datetime.timedelta(minutes=2 * position),
                        "kind": kind, "from_status": source, "to_status": target,
                        "reason": "ModelNotFound" if kind == "error" else "",
                        "actor_id": who, "demand": held,
                    }
        return self._copy(WorkloadEvent, rows())

    # --- quota requests -------------------------------------------------------------------------

    def quota_requests(self) -> int:
        rng = self.rng
        tenants = self.sizes.tenants
        awaiting = self.sizes.awaiting_review
        total = self.sizes.quota_requests
        self.request_lines: list[tuple[int, int, str]] = []
        self.request_status: dict[int, str] = {}
        rows = []
        for q in range(total):
            request_id = q + 1
            tenant_id = q % tenants + 1
            # The newest requests are the ones awaiting review; a few are on their way.
            newest_first = total - q
            if newest_first <= awaiting:
                status = "submitted"
            elif newest_first <= awaiting + max(1, awaiting // 40):
                status = "approved" if q % 2 else "failed"
            else:
                status = _weighted(rng, QUOTA_DECIDED)
            created = self.anchor - datetime.timedelta(
                minutes=int(newest_first * 365 * 24 * 60 / total) + rng.randint(0, 59))
            decided = status != "submitted" and status != "withdrawn"
            rows.append({
                "id": request_id, "tenant_id": tenant_id,
                "requested_by_id": self.tenant_owner.get(tenant_id, 1),
                "justification": JUSTIFICATIONS[q % len(JUSTIFICATIONS)],
                "ends_on": (created + datetime.timedelta(days=42)).date() if q % 4 == 0
                else None,
                "status": status, "created_at": created,
                "decided_by_id": 2 if decided else None,
                "decided_at": created + datetime.timedelta(hours=5) if decided else None,
                "decision_note": "No capacity this quarter." if status == "rejected" else "",
                "applied_at": created + datetime.timedelta(hours=6)
                if status in ("applied", "expired") else None,
                "last_error": "the API server answered 503" if status == "failed" else "",
                "attempts": 1 if decided else 0,
                "ended_at": created + datetime.timedelta(days=42) if status == "expired"
                else None,
            })
            model = self.tenant_model[tenant_id]
            self.request_lines.append((request_id, 1 + q % 8, f"gpu:{model}"))
            if q % 3 == 0:
                self.request_lines.append((request_id, 64, "cpu"))
            self.request_status[request_id] = status
        return self._copy(QuotaRequest, rows)

    def quota_request_lines(self) -> int:
        def rows() -> Iterator[dict]:
            for line_id, (request_id, amount, resource) in enumerate(self.request_lines, 1):
                granted = self.request_status[request_id] in ("applied", "expired", "approved",
                                                              "failed")
                yield {"id": line_id, "request_id": request_id, "resource": resource,
                       "amount": amount, "approved_amount": amount if granted else None,
                       "limit_before": 16 if granted else None,
                       "limit_after": 16 + amount if granted else None}
        return self._copy(QuotaRequestLine, rows())

    # --- billing --------------------------------------------------------------------------------

    def rates(self) -> int:
        gpu_price = {model: price for model, _, _, _, price in NODE_PLAN}
        self.rate_card: dict[str, Decimal] = {}
        for key in resource_classes.all_keys():
            rc = resource_classes.parse(key)
            if rc.kind == "gpu":
                price = gpu_price[rc.gpu_model.key]
            elif rc.kind == "mig":
                slices = int(rc.mig_profile.split("g.", 1)[0])
                price = (gpu_price[rc.gpu_model.key] * slices / 7).quantize(Decimal("0.000001"))
            elif rc.kind == "hami":
                share = rc.gpu_model.memory_gib if rc.hami_counter == "memory-gib" else 100
                price = (gpu_price[rc.gpu_model.key] / share).quantize(Decimal("0.000001"))
            elif rc.kind == "count":
                price = Decimal("0.050000")
            else:
                price = {"cpu": Decimal("0.030000"), "memory-gib": Decimal("0.004000"),
                         "storage-gib": Decimal("0.000100")}[key]
            self.rate_card[key] = price
        valid_from = _add_months(self.anchor, -INVOICE_MONTHS - 1)
        return self._copy(Rate, (
            {"id": i + 1, "resource": key, "unit_price": price, "unit": "hour",
             "valid_from": valid_from, "note": "List price", "created_at": valid_from}
            for i, (key, price) in enumerate(self.rate_card.items())
        ))

    def invoices(self) -> int:
        """Twelve months of invoices per tenant: the last month issued or still draft, older
        months paid (some still issued: overdue), numbered INV-YYYY-NNNN per year."""
        rng = self.rng
        self.invoice_plan: list[tuple[int, int, datetime.datetime, datetime.datetime]] = []
        self.sequences: dict[int, int] = {}
        rows = []
        months = [_add_months(self.anchor, -m) for m in range(INVOICE_MONTHS, 0, -1)]
        for index, start in enumerate(months):
            end = _add_months(start, 1)
            last_month = index == len(months) - 1
            for tenant_id in self.tenant_slugs:
                invoice_id = len(rows) + 1
                roll = rng.random()
                if last_month:
                    status = "draft" if roll < 0.3 else "issued"
                else:
                    status = "issued" if roll < 0.05 else "paid"
                number = issue_date = due_date = None
                if status != "draft":
                    year = end.year
                    self.sequences[year] = self.sequences.get(year, 0) + 1
                    number = f"INV-{year}-{self.sequences[year]:04d}"
                    issue_date = end.date()
                    due_date = issue_date + datetime.timedelta(days=30)
                lines = self._invoice_lines(tenant_id, start, end)
                subtotal = sum(amount for *_, amount in lines)
                discount_percent = Decimal("5.00") if tenant_id % 10 == 0 else Decimal("0")
                discount = (subtotal * discount_percent / 100).quantize(MONEY_CENT, ROUND_HALF_UP)
                rows.append({
                    "id": invoice_id, "tenant_id": tenant_id, "period_start": start,
                    "period_end": end, "status": status,
                    "tenant_name": self.tenant_names[tenant_id],
                    "cost_center": f"CC-{1000 + tenant_id}",
                    "currency": "EUR", "discount_percent": discount_percent,
                    "subtotal": subtotal, "discount": discount, "tax": Decimal("0"),
                    "total": subtotal - discount, "computed_at": end, "number": number,
                    "issue_date": issue_date, "due_date": due_date,
                    "issued_at": end + datetime.timedelta(hours=6) if number else None,
                    "issued_by_id": 3 if number else None,
                    "paid_at": end + datetime.timedelta(days=20) if status == "paid" else None,
                    "paid_by_id": 3 if status == "paid" else None,
                    "payment_reference": f"SEPA-{invoice_id:08d}" if status == "paid" else "",
                    "created_at": end,
                })
                self.invoice_plan.append((invoice_id, tenant_id, start, end))
                self.__dict__.setdefault("_lines", {})[invoice_id] = lines
        return self._copy(Invoice, rows)

    def _invoice_lines(self, tenant_id: int, start, end) -> list[tuple[str, int, Decimal]]:
        rng = self.rng
        hours = int((end - start).total_seconds() // 3600)
        resources = [f"gpu:{self.tenant_model[tenant_id]}", "cpu", "memory-gib", "storage-gib"]
        lines = []
        for resource in resources:
            units = {"cpu": 64, "memory-gib": 512, "storage-gib": 2000}.get(resource, 4)
            unit_hours = units * hours * rng.randint(20, 100) // 100
            amount = (self.rate_card[resource] * unit_hours).quantize(MONEY_CENT, ROUND_HALF_UP)
            lines.append((resource, unit_hours, amount))
        return lines

    def invoice_lines(self) -> int:
        def rows() -> Iterator[dict]:
            line_id = 0
            lines = self.__dict__["_lines"]
            for invoice_id, _, start, end in self.invoice_plan:
                for position, (resource, unit_hours, amount) in enumerate(lines[invoice_id]):
                    line_id += 1
                    label = resource_classes.parse(resource).label
                    yield {
                        "id": line_id, "invoice_id": invoice_id, "position": position,
                        "kind": "usage", "resource": resource,
                        "description": f"{label}, {start:%B %Y}",
                        "period_start": start, "period_end": end,
                        "unit_seconds": unit_hours * 3600,
                        "quantity_hours": Decimal(unit_hours), "quantity": Decimal(unit_hours),
                        "unit": "hour", "unit_price": self.rate_card[resource],
                        "amount": amount, "events": [],
                    }
        return self._copy(InvoiceLine, rows())

    def credit_notes(self) -> int:
        """A credit note on one issued invoice in a hundred (numbered CN-YYYY-NNNN)."""
        self.credit_sequences: dict[int, int] = {}
        rows = []
        for invoice_id, _, _, end in self.invoice_plan:
            if invoice_id % 100 != 7 or end >= self.anchor:
                continue
            issued = (end + datetime.timedelta(days=25)).date()
            self.credit_sequences[issued.year] = self.credit_sequences.get(issued.year, 0) + 1
            subtotal = sum(amount for *_, amount in self.__dict__["_lines"][invoice_id])
            rows.append({
                "id": len(rows) + 1, "invoice_id": invoice_id,
                "number": f"CN-{issued.year}-{self.credit_sequences[issued.year]:04d}",
                "amount": max(MONEY_CENT, (subtotal / 10).quantize(MONEY_CENT, ROUND_HALF_UP)),
                "reason": "Downtime credit: node maintenance overran its window.",
                "issue_date": issued, "created_by_id": 3,
                "created_at": end + datetime.timedelta(days=25),
            })
        return self._copy(CreditNote, rows)

    def document_sequences(self) -> int:
        sequences = [("INV", year, last) for year, last in sorted(self.sequences.items())]
        sequences += [("CN", year, last) for year, last in sorted(self.credit_sequences.items())]
        return self._copy(DocumentSequence, (
            {"id": i + 1, "prefix": prefix, "year": year, "last": last}
            for i, (prefix, year, last) in enumerate(sequences)
        ))

    def _usage_month(self) -> tuple[datetime.datetime, int]:
        start = _add_months(self.anchor, -1)
        return start, int((self.anchor - start).total_seconds() // 3600)

    def metering_windows(self) -> int:
        start, hours = self._usage_month()
        return self._copy(MeteringWindow, (
            {"id": h + 1, "source": "allocated", "hour": start + datetime.timedelta(hours=h),
             "status": "done", "attempts": 1, "records": self.sizes.metered_workloads,
             "metered_at": start + datetime.timedelta(hours=h + 1, minutes=5)}
            for h in range(hours)
        ))

    def usage_records(self) -> int:
        """One allocated row per metered workload and hour of last month: the biggest table, so
        written as COPY text by hand, with its secondary indexes built once afterwards."""
        start, hours = self._usage_month()
        stamps = [(start + datetime.timedelta(hours=h)).isoformat() for h in range(hours)]
        metered = [(start + datetime.timedelta(hours=h + 1, minutes=5)).isoformat()
                   for h in range(hours)]
        step = max(1, self.sizes.workloads // self.sizes.metered_workloads)
        chosen = self.workload_rows[::step][: self.sizes.metered_workloads]
        table = UsageRecord._meta.db_table
        columns = ("id", "tenant_id", "workload_id", "hostname", "source", "resource", "hour",
                   "unit_seconds", "busy_seconds", "metered_at")
        count = 0
        quote = connection.ops.quote_name
        with connection.cursor() as cursor:
            # Foreign keys and secondary indexes are dropped for the load and made again after
            # it: one pass each over 7 million rows instead of a check and an insert per row.
            # Altering a table is refused while checks of the rows before are pending: run them.
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
            cursor.execute(
                "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint "
                "WHERE conrelid = %s::regclass AND contype = 'f'", [table])
            foreign_keys = cursor.fetchall()
            for name, _ in foreign_keys:
                cursor.execute(f"ALTER TABLE {quote(table)} DROP CONSTRAINT {quote(name)}")
            cursor.execute(
                "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = %s AND indexname "
                "NOT IN (SELECT conname FROM pg_constraint)", [table])
            secondary = cursor.fetchall()
            for name, _ in secondary:
                cursor.execute(f"DROP INDEX {quote(name)}")
            with cursor.cursor.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
                for workload_id, tenant_id, _, demand, _, _ in chosen:
                    gpu = next((k for k in demand if not k.startswith(("count:", "cpu",
                                                                       "memory", "storage"))),
                               "cpu")
                    seconds = 3600 * max(1, int(demand.get(gpu, 1)))
                    prefix = f"{tenant_id}\t{workload_id}\t\tallocated\t{gpu}\t"
                    chunk = []
                    for h in range(hours):
                        count += 1
                        chunk.append(
                            f"{count}\t{prefix}{stamps[h]}\t{seconds}\t0\t{metered[h]}\n")
                    copy.write("".join(chunk))
            cursor.execute("SET LOCAL maintenance_work_mem = '256MB'")
            for _, definition in secondary:
                cursor.execute(definition)
            for name, definition in foreign_keys:
                cursor.execute(
                    f"ALTER TABLE {quote(table)} ADD CONSTRAINT {quote(name)} {definition}")
            cursor.execute("SET CONSTRAINTS ALL DEFERRED")
        return count


def generate(*, scale: float, seed: int = 42, anchor: datetime.datetime | None = None,
             log: Callable[[str], None] = print) -> dict:
    """Write the data set into the (empty) default database; return counts and timings."""
    generator = Generator(scale=scale, seed=seed, anchor=anchor or default_anchor(), log=log)
    summary = generator.run()
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    return summary
