"""What the data set holds at scale 1, and how every count follows the scale."""

from __future__ import annotations

import datetime
import random
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal

# The admins' images are the demo's: the benchmark's pages list the same catalog.
from demo.admin_images import NOTEBOOK_IMAGES, VM_IMAGES  # noqa: F401 (the data set's too)

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
    "notebook": lambda model: {"image": "pytorch-cuda", "cpu": 4, "memory_gib": 16,
                               "gpu": f"gpu:{model}", "gpus": 1},
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


def weighted(rng: random.Random, choices: tuple[tuple[str, int], ...]) -> str:
    values, weights = zip(*choices, strict=True)
    return rng.choices(values, weights=weights)[0]


def add_months(moment: datetime.datetime, months: int) -> datetime.datetime:
    month = moment.month - 1 + months
    return moment.replace(year=moment.year + month // 12, month=month % 12 + 1, day=1)


