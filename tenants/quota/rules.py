"""What a quota request may ask for: one set of rules for the form, the API and the services.

Each check raises a plain ValidationError with a message; callers attach it to their field.
"""

import datetime

from django.core.exceptions import ValidationError

from inventory import resource_classes
from inventory.models import Cluster

# More than this much extra in one request is a typo, not a plan (a GPU pod is 8 GPUs,
# the whole demo fleet 320): the form says so instead of queueing an absurd ask.
MAX_ADDITIONAL: dict[str, int] = {
    "gpu": 1024,
    "mig": 7 * 1024,
    # HAMi counters are GiB of GPU memory or percent of a GPU: 1,024 big GPUs' worth.
    "hami": 150_000,
    "cpu": 100_000,
    "memory-gib": 1_000_000,
    "storage-gib": 10_000_000,
    "count": 500,
}
MAX_JUSTIFICATION = 4000
PARTITION_KINDS = frozenset({"mig", "hami"})
MAX_LINES = len(resource_classes.all_keys())

KIND_GROUPS = {
    "gpu": "Whole GPUs",
    "mig": "MIG partitions",
    "hami": "HAMi GPU shares",
    "scalar": "CPU, memory and storage",
    "count": "Workloads",
}


def ceiling(resource_class: resource_classes.ResourceClass) -> int:
    if resource_class.kind == "scalar":
        return MAX_ADDITIONAL[resource_class.key]
    return MAX_ADDITIONAL[resource_class.kind]


def partitions_allowed(isolation: str) -> bool:
    """Partitioned GPUs (MIG, HAMi) only inside one trust domain: never for dedicated tenants."""
    return isolation != "dedicated"


def check_resource(*, resource: str, isolation: str) -> resource_classes.ResourceClass:
    try:
        resource_class = resource_classes.parse(resource)
    except resource_classes.UnknownResourceClass:
        raise ValidationError(
            f"Unknown resource “{resource}”: pick a GPU model, MIG profile, vCPU, memory, "
            "storage or a workload kind from the list.",
            code="unknown_resource",
        ) from None
    if resource_class.kind in PARTITION_KINDS and not partitions_allowed(isolation):
        raise ValidationError(
            "Dedicated tenants get whole GPUs only; MIG partitions and HAMi shares are shared "
            "inside one trust domain.",
            code="partition_not_allowed",
        )
    return resource_class


def check_amount(*, amount: int, resource_class: resource_classes.ResourceClass | None) -> None:
    if amount is None or amount <= 0:
        raise ValidationError("Ask for at least 1 more.", code="not_positive")
    if resource_class is not None and amount > ceiling(resource_class):
        raise ValidationError(
            f"{amount:,} more is beyond any plausible request (at most "
            f"{ceiling(resource_class):,} at once); talk to the platform team.",
            code="absurd",
        )


def check_ends_on(*, ends_on: datetime.date | None, today: datetime.date) -> None:
    if ends_on is not None and ends_on <= today:
        raise ValidationError("The end date must be in the future.", code="past")


def check_no_duplicates(resources: list[str]) -> None:
    seen = set()
    for resource in resources:
        if resource in seen:
            raise ValidationError(
                f"{resource} is listed twice: put the whole amount on one line.",
                code="duplicate",
            )
        seen.add(resource)


def requestable_choices(isolation: str) -> list[tuple[str, list[tuple[str, str]]]]:
    """Resource classes a tenant of `isolation` may ask for, grouped for a <select>."""
    groups: dict[str, list[tuple[str, str]]] = {label: [] for label in KIND_GROUPS.values()}
    for key in resource_classes.all_keys():
        resource_class = resource_classes.parse(key)
        if resource_class.kind in PARTITION_KINDS and not partitions_allowed(isolation):
            continue
        groups[KIND_GROUPS[resource_class.kind]].append((key, resource_class.label))
    return [(label, options) for label, options in groups.items() if options]


def clusters_offered() -> list[str]:
    """The clusters quota may be asked for on: those in service, by slug. One query."""
    return list(Cluster.objects.in_service().order_by("slug").values_list("slug", flat=True))


def check_cluster(*, cluster: str | None) -> None:
    """Quota is asked for and granted on a cluster in service (not retired), or anywhere."""
    if cluster is None:
        return
    if not Cluster.objects.in_service().filter(slug=cluster).exists():
        raise ValidationError(f"No cluster “{cluster}” in service: pick one, or anywhere.")
