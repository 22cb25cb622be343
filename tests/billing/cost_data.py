"""A tenant's month of usage the cost breakdown tests share: workloads launched by two people
(one since removed) under two labels, a record of no workload, odd prices that make every
share round, a price change mid-month, and a downtime credit."""

from datetime import UTC, datetime
from decimal import Decimal

from billing.models import Rate, UsageRecord
from inventory.models import HealthEvent, Severity
from tenants.workloads.models import Workload
from tests.factories import NodeFactory, UserFactory

H100 = "gpu:nvidia-h100-80gb"
L40S = "gpu:nvidia-l40s"


def utc(*args) -> datetime:
    return datetime(*args, tzinfo=UTC)


def cost_rates() -> None:
    Rate.objects.create(resource=H100, unit_price=Decimal("2.37"), valid_from=utc(2025, 11, 1),
                        valid_to=utc(2026, 1, 16))
    Rate.objects.create(resource=H100, unit_price=Decimal("3.11"), valid_from=utc(2026, 1, 16))
    Rate.objects.create(resource=L40S, unit_price=Decimal("1.07"), valid_from=utc(2025, 11, 1))


def people():
    return (UserFactory(username="ada", first_name="Ada", last_name="L"),
            UserFactory(username="bob", first_name="", last_name=""))


def workload(tenant, name: str, *, by, label: str = "") -> Workload:
    return Workload.objects.create(tenant=tenant, kind="inference", name=name, launched_by=by,
                                   label=label, demand={H100: 1})


def allocated(tenant, workload, hour, seconds, resource=H100) -> UsageRecord:
    return UsageRecord.objects.create(
        tenant=tenant, workload=workload, source=UsageRecord.Source.ALLOCATED, resource=resource,
        hour=hour, unit_seconds=seconds,
        launched_by=workload.launched_by if workload else None,
        label=workload.label if workload else "",
    )


def cost_month(tenant, *, ada, bob, copies: int = 1, days=(3, 10, 20, 25),
               prefix: str = "") -> dict:
    """January 2026 of `tenant`: chat, train, evals and orphan (`copies` of each), by day."""
    made = {}
    for n in range(copies):
        suffix = f"{prefix}-{n}" if n or prefix else ""
        chat = workload(tenant, f"chat{suffix}", by=ada, label="support-bot")
        train = workload(tenant, f"train{suffix}", by=ada, label="llama ft")
        evals = workload(tenant, f"evals{suffix}", by=bob, label="llama ft")
        orphan = workload(tenant, f"orphan{suffix}", by=None)
        for day in days:
            allocated(tenant, chat, utc(2026, 1, day, 8), 1237)
            allocated(tenant, train, utc(2026, 1, day, 8), 7 * 3600 - 11)
            allocated(tenant, evals, utc(2026, 1, day, 9), 2999)
            allocated(tenant, evals, utc(2026, 1, day, 9), 1001, resource=L40S)
            allocated(tenant, orphan, utc(2026, 1, day, 10), 333)
        made |= {f"chat{suffix}": chat, f"train{suffix}": train, f"evals{suffix}": evals,
                 f"orphan{suffix}": orphan}
    # A record of no workload (as old data may hold) is unattributed, like the orphan's person.
    allocated(tenant, None, utc(2026, 1, 12, 0), 1777)
    # Measured usage is not billed: it never shows (but it earns the downtime credit below).
    node = NodeFactory(hostname=f"gpu-{tenant.slug}{prefix}")
    HealthEvent.objects.create(node=node, kind=HealthEvent.Kind.XID, severity=Severity.CRITICAL,
                               opened_at=utc(2026, 1, 10, 8), resolved_at=utc(2026, 1, 10, 9))
    UsageRecord.objects.create(tenant=tenant, source=UsageRecord.Source.MEASURED, resource=H100,
                               hour=utc(2026, 1, 10, 8), hostname=node.hostname,
                               unit_seconds=3600)
    return made
