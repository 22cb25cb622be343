"""The generator: every group of tables in the order their keys need."""

from __future__ import annotations

import datetime
import random
import time
import uuid
from collections.abc import Callable

from django.contrib.auth import get_user_model
from django.db import connection, transaction

from billing.models import (
    BillingAccount,
    CreditNote,
    DocumentSequence,
    Invoice,
    InvoiceLine,
    MeteringWindow,
    Payment,
    Rate,
    UsageRecord,
)
from inventory.models import GPU, NIC, HealthEvent, Node, Rack, Site
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
from tenants.workloads.models import VmImage

from .billing import BillingTables
from .copying import reset_sequences
from .fleet import FleetTables
from .people import PeopleTables
from .plan import Sizes, default_anchor
from .workloads import WorkloadTables


def written_models() -> list:
    """Every model the generator writes rows of (with ids of its own choosing)."""
    return [
        Site, Rack, Node, GPU, NIC, HealthEvent, get_user_model(), Tenant, Membership,
        RoleAssignment, Quota, BillingAccount, VmImage, Workload, WorkloadEvent, QuotaRequest,
        QuotaRequestLine, Rate, Invoice, InvoiceLine, CreditNote, Payment, DocumentSequence,
        MeteringWindow, UsageRecord,
    ]


def database_is_empty() -> bool:
    return not any(model.objects.exists() for model in written_models())


class Generator(FleetTables, PeopleTables, WorkloadTables, BillingTables):
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
        self._step("payments", self.payments)
        self._step("document sequences", self.document_sequences)
        self._step("metering windows", self.metering_windows)
        self._step("usage records", self.usage_records)
        reset_sequences(written_models())
        return {
            "scale": self.scale,
            "seed": self.seed,
            "anchor": self.anchor.isoformat(),
            "rows": self.counts,
            "seconds": self.timings,
            "total_seconds": round(time.perf_counter() - started, 2),
        }

def generate(*, scale: float, seed: int = 42, anchor: datetime.datetime | None = None,
             log: Callable[[str], None] = print) -> dict:
    """Write the data set into the (empty) default database; return counts and timings."""
    generator = Generator(scale=scale, seed=seed, anchor=anchor or default_anchor(), log=log)
    summary = generator.run()
    with connection.cursor() as cursor:
        # A live database is vacuumed by autovacuum as it fills; rows written by COPY into a
        # fresh one are not yet, and until they are no count or scan can be index-only (the
        # visibility map is empty). The bench measures the former. (Within a transaction,
        # as in tests, VACUUM cannot run: statistics only.)
        cursor.execute("ANALYZE" if connection.in_atomic_block else "VACUUM (ANALYZE)")
    return summary
