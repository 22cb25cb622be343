"""The benchmark's data set: linear in its scale, deterministic, complete, and never written
over data it did not make."""

import hashlib
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.db.models import Count, F, Sum

from bench.dataset import FULL_SCALE, Sizes
from billing.models import CreditNote, Invoice, InvoiceLine, Payment, UsageDaily, UsageRecord
from inventory.models import GPU, Node
from tenants.models import QuotaRequest, Tenant, Workload, WorkloadEvent
from tenants.workloads.registry import KINDS
from tests.factories import TenantFactory

ANCHOR = "2026-11-01"


def test_sizes_are_the_issue_s_at_scale_one_and_at_least_one_of_each_below():
    assert Sizes.at(1).__dict__ == FULL_SCALE
    tiny = Sizes.at(0.0001)
    assert all(value >= 1 for value in tiny.__dict__.values())
    assert Sizes.at(0.1).nodes == 200 and Sizes.at(0.1).awaiting_review == 40


def _digest() -> str:
    """A digest of every row of the tables the pages read most, in id order."""
    digest = hashlib.sha256()
    with connection.cursor() as cursor:
        for model in (Node, GPU, Tenant, Workload, WorkloadEvent, QuotaRequest, Invoice,
                      InvoiceLine, CreditNote, UsageRecord):
            table = model._meta.db_table
            columns = [f.column for f in model._meta.concrete_fields]
            cursor.execute(
                f"SELECT md5(string_agg(({', '.join(columns)})::text, ',' ORDER BY id)) "  # noqa: S608
                f"FROM {table}"
            )
            digest.update(cursor.fetchone()[0].encode())
    return digest.hexdigest()


def _generate(*args: str) -> str:
    out = StringIO()
    call_command("bench_data", "--scale", "0.002", "--anchor", ANCHOR, *args, stdout=out)
    return out.getvalue()


@pytest.mark.django_db(transaction=True)
def test_the_data_set_is_complete_deterministic_and_refuses_a_database_with_data():
    _generate()
    sizes = Sizes.at(0.002)
    assert Node.objects.count() == sizes.nodes
    assert GPU.objects.count() == sizes.nodes * 8
    assert Tenant.objects.count() == sizes.tenants
    assert Workload.objects.values("kind").distinct().count() == len(KINDS)
    assert QuotaRequest.objects.filter(status="submitted").count() == sizes.awaiting_review
    assert Invoice.objects.values("period_start").distinct().count() == 12
    issued = Invoice.objects.exclude(status="draft")
    assert issued.filter(number__regex=r"^INV-\d{4}-\d{4,}$").count() == issued.count() > 0
    assert CreditNote.objects.exclude(invoice__status="draft").count() >= 1
    # Settled as the services settle: each paid invoice one payment of its total, and every
    # invoice's credit notes and payments summed onto it.
    paid = Invoice.objects.filter(status="paid")
    assert Payment.objects.count() == paid.count() > 0
    assert not paid.exclude(amount_paid=F("total")).exists()
    for invoice in Invoice.objects.filter(credit_notes__isnull=False).distinct():
        notes = invoice.credit_notes.aggregate(s=Sum("amount"))["s"]
        assert invoice.amount_credited == notes
    hours = UsageRecord.objects.values("hour").distinct().count()
    assert hours == 31 * 24  # October 2026, the month before the anchor
    assert UsageRecord.objects.count() == sizes.metered_workloads * hours
    # Usage per day (the usage explorer's) is filled by the COPY's trigger: the same sums.
    per_day = UsageDaily.objects.aggregate(records=Sum("records"), seconds=Sum("unit_seconds"))
    records = UsageRecord.objects.aggregate(records=Count("id"), seconds=Sum("unit_seconds"))
    assert per_day == records
    assert UsageDaily.objects.values("day").distinct().count() == 31
    first = _digest()

    with pytest.raises(CommandError, match="not empty"):
        _generate()
    TenantFactory()  # a database with data of its own is refused just the same
    with pytest.raises(CommandError, match="not empty"):
        _generate()

    _generate("--reset")
    assert _digest() == first
